"""`Endpoint`, one exported function, and the flattening of decoding states."""

import typing

import keras


class Endpoint(typing.NamedTuple):
    """One exported function, described without TensorFlow.

    `keras_rnnattn.export` turns `inputs` into `tf.TensorSpec`s and serves
    `fn` under `name`.

    Fields:
        name: str, the signature name (`"serving_default"`, `"decode_step"`).
        fn: called with one keyword argument per input, returns a dict of
            tensors (the signature's outputs); keras.ops only.
        inputs: dict `{name: (shape, dtype)}`, None in a shape for a variable
            size.
        description: str, one line for `export.json`.
    """

    name: str
    fn: typing.Callable
    inputs: dict
    description: str


def flatten_state(prefix, state):
    """`{"prefix_0": t, ...}` for a nested decoding state, in `keras.tree` order."""
    leaves = keras.tree.flatten(state)
    return {f"{prefix}_{i}": leaf for i, leaf in enumerate(leaves)}


def unflatten_state(prefix, template, flat):
    """The nested state of `template`'s structure from `flatten_state`'s dict."""
    count = len(keras.tree.flatten(template))
    return keras.tree.pack_sequence_as(
        template, [flat[f"{prefix}_{i}"] for i in range(count)]
    )


def state_inputs(prefix, template, batch_size):
    """Endpoint inputs `{"prefix_i": (shape, dtype)}` of a flattened state."""
    return {
        name: (
            (batch_size,) + tuple(leaf.shape[1:]),
            keras.backend.standardize_dtype(leaf.dtype),
        )
        for name, leaf in flatten_state(prefix, template).items()
    }
