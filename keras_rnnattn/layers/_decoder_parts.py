"""What an `AttentionDecoder` is made of: its layers made from its arguments,
where its cell's states lie, and its config read and written.

Functions of explicit arguments: the decoder assigns what they return to its
own attributes (where Keras tracks the layers and their weight paths).
"""

import keras
from keras import ops

from keras_rnnattn.layers._decoder_checks import CELLS, deserialize, indexed
from keras_rnnattn.layers.score_layers import score_layer


def recurrent_layer(cell, units, dtype_policy):
    """The RNN layer over the cell (GRU or LSTM for a named cell): the fast
    path's layer, and the holder of the cell's weights."""
    args = dict(
        return_sequences=True, return_state=True, dtype=dtype_policy, name="rnn"
    )
    if cell in CELLS:
        layer = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        return layer(units, **args)
    return keras.layers.RNN(cell, **args)


def attention_layers(specs, units, multi):
    """The mechanisms: a registry name's layer, or the layer given."""
    return [
        score_layer(spec, units, name=indexed("attention", i, multi))
        if isinstance(spec, str)
        else spec
        for i, spec in enumerate(specs)
    ]


def dense_readout(sizes, activation, dtype_policy, multi):
    """W_c: one Dense layer without bias per mechanism, or None without sizes."""
    if sizes is None:
        return None
    return [
        keras.layers.Dense(
            size,
            use_bias=False,
            activation=activation,
            dtype=dtype_policy,
            name=indexed("attention_dense", i, multi),
        )
        for i, size in enumerate(sizes)
    ]


def state_layout(cell):
    """`(flat state count, index of the top layer's output h among them)`."""
    count = len(keras.tree.flatten(cell.state_size))
    if not isinstance(cell, keras.layers.StackedRNNCells):
        return count, 0
    top = len(keras.tree.flatten(cell.cells[-1].state_size))
    return count, count - top


def serialize_arguments(
    cell_name, cell, attention_names, mechanisms, multi, attention_layer, activation
):
    """The config entries of the decoder's layer arguments: names stay names,
    instances are serialized."""
    serialize = keras.saving.serialize_keras_object
    attention = [
        name or serialize(mechanism)
        for name, mechanism in zip(attention_names, mechanisms)
    ]
    if attention_layer is not None:
        attention_layer = (
            [serialize(layer) for layer in attention_layer]
            if multi
            else serialize(attention_layer)
        )
    if activation is not None and not isinstance(activation, str):
        activation = keras.activations.serialize(activation)
    return {
        "cell": cell_name or serialize(cell),
        "attention": attention if multi else attention[0],
        "attention_layer": attention_layer,
        "attention_activation": activation,
    }


def arguments_from_config(config):
    """The decoder's arguments from its config (older configs included)."""
    config = dict(config)
    if "output_attention" not in config and config.get("attention_layer_size") is None:
        # Saved before `attention_layer_size=None` took tfa's meaning (o_t = c_t):
        # None then meant o_t = [h_t; c_t].
        config["attention_layer_size"] = "concat"
    for key in ("cell", "attention", "attention_layer"):
        config[key] = deserialize(config.get(key))
    activation = config.get("attention_activation")
    if isinstance(activation, dict):
        config["attention_activation"] = keras.activations.deserialize(activation)
    return config


def cell_initial_states(initial_state, count, dtype):
    """A call's `initial_state` as the cell's flat states in `dtype`, checked;
    None where none was given."""
    if initial_state is None:
        return None
    states = [
        ops.convert_to_tensor(state, dtype=dtype)
        for state in keras.tree.flatten(initial_state)
    ]
    if len(states) != count:
        raise ValueError(
            f"`initial_state` must hold the cell's {count} state tensors. "
            f"Received {len(states)}."
        )
    return states


def unbuilt_output_size(decoder, memory_shape):
    """The decoder's output size, from its configuration where it is not built."""
    size = decoder.output_size
    if size is None and decoder._sizes is not None:  # not built
        size = sum(decoder._sizes)
    elif size is None and decoder.attention_layer is None:  # not built, no W_c
        shapes = decoder._mechanisms.per_mechanism(memory_shape, "memory", shapes=True)
        size = sum(shape[-1] for shape in shapes)
        size += decoder.units if decoder._concat else 0
    return size
