"""`AttentionDecoder`'s recurrence: the named cells' kernels, or any cell called.

Functions of the cell and the tensors they use. With `cell="gru"` or `"lstm"`
the step multiplies the cell's kernels itself, so that the input projection is
done once for all steps; a cell instance (or a stack) is called as it is.
"""

import keras
from keras import ops

from keras_rnnattn._backend import gate_step, linear


def cell_structure(cell, cell_states):
    """The flat cell states in the structure `cell` takes."""
    if not isinstance(cell, keras.layers.StackedRNNCells):
        return list(cell_states)
    nested, start = [], 0  # plain lists: JAX takes no tracked ones
    for layer in cell.cells:
        count = len(keras.tree.flatten(layer.state_size))
        nested.append(list(cell_states[start : start + count]))
        start += count
    return nested


def step_params(cell, cell_name, input_dim, attention_kernels, dtype):
    """The step's weights as tensors of `dtype`, fetched once per loop.

    Args:
        cell: the recurrent cell.
        cell_name: `"gru"`, `"lstm"` (their kernels are multiplied in the
            step) or None (the cell is called).
        input_dim: int, the size of the step's input (the kernel's first rows).
        attention_kernels: the Dense W_c kernels, or None.
        dtype: the compute dtype.

    Returns:
        dict of tensors.
    """
    params = {}
    if cell_name is not None:
        kernel = ops.cast(cell.kernel, dtype)  # (input_dim + feed_dim, G)
        params["kernel_in"] = kernel[:input_dim]
        params["kernel_feed"] = kernel[input_dim:]
        params["recurrent_kernel"] = ops.cast(cell.recurrent_kernel, dtype)
        bias = ops.cast(cell.bias, dtype)
        if cell_name == "gru":  # reset_after: input and recurrent biases
            params["bias_in"], params["bias_rec"] = bias[0], bias[1]
        else:
            params["bias_in"] = bias
    if attention_kernels is not None:
        params["attention_kernels"] = attention_kernels
    return params


def project_inputs(cell_name, inputs, params):
    """The input part of the cell's pre-activations, for any number of steps."""
    if cell_name is None:
        return inputs
    return linear(inputs, params["kernel_in"], params["bias_in"])


def cell_step(cell, cell_name, x, cell_states, feed, params, training):
    """The recurrence: the top output h and the flat cell states from input x."""
    if cell_name is None:
        if feed is not None:
            x = ops.concatenate([x, feed], axis=-1)
        h, new_states = cell(x, cell_structure(cell, cell_states), training=training)
        return h, list(keras.tree.flatten(new_states))
    if feed is not None:
        x = x + linear(feed, params["kernel_feed"])  # (B, G)
    return gate_step(
        cell_name,
        cell,
        x,
        cell_states,
        params["recurrent_kernel"],
        params.get("bias_rec"),
    )
