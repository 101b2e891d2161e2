"""`AttentionDecoder`'s recurrence: the named cells' kernels, or any cell called.

A mixin of the decoder. With `cell="gru"` or `"lstm"` the step multiplies the
cell's kernels itself, so that the input projection is done once for all
steps; a cell instance (or a stack) is called as it is.
"""

import keras
from keras import ops

from keras_rnnattn._backend import gate_step, linear


class DecoderCells:
    """Methods of `AttentionDecoder` that run its recurrent cell."""

    def _cell_structure(self, cell_states):
        """The flat cell states in the structure the cell takes."""
        if not isinstance(self.cell, keras.layers.StackedRNNCells):
            return list(cell_states)
        nested, start = [], 0  # plain lists: JAX takes no tracked ones
        for cell in self.cell.cells:
            count = len(keras.tree.flatten(cell.state_size))
            nested.append(list(cell_states[start : start + count]))
            start += count
        return nested

    def _params(self):
        """The step's weights as tensors of the compute dtype, fetched once per loop."""
        dtype = self.compute_dtype
        params = {}
        if self._cell_name is not None:
            cell = self.cell
            kernel = ops.cast(cell.kernel, dtype)  # (input_dim + feed_dim, G)
            params["kernel_in"] = kernel[: self.input_dim]
            params["kernel_feed"] = kernel[self.input_dim :]
            params["recurrent_kernel"] = ops.cast(cell.recurrent_kernel, dtype)
            bias = ops.cast(cell.bias, dtype)
            if self._cell_name == "gru":  # reset_after: input and recurrent biases
                params["bias_in"], params["bias_rec"] = bias[0], bias[1]
            else:
                params["bias_in"] = bias
        if self.attention_dense is not None:
            params["attention_kernels"] = [
                ops.cast(layer.kernel, dtype) for layer in self._readout_layers()
            ]
        return params

    def _project_inputs(self, inputs, params):
        """The input part of the cell's pre-activations, for any number of steps."""
        if self._cell_name is None:
            return inputs
        return linear(inputs, params["kernel_in"], params["bias_in"])

    def _cell_step(self, x, cell_states, feed, params, training):
        """The recurrence: the top output h and the flat cell states from input x."""
        if self._cell_name is None:
            if feed is not None:
                x = ops.concatenate([x, feed], axis=-1)
            h, new_states = self.cell(
                x, self._cell_structure(cell_states), training=training
            )
            return h, list(keras.tree.flatten(new_states))
        if feed is not None:
            x = x + linear(feed, params["kernel_feed"])  # (B, G)
        return gate_step(
            self._cell_name,
            self.cell,
            x,
            cell_states,
            params["recurrent_kernel"],
            params.get("bias_rec"),
        )
