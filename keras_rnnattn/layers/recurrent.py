"""The recurrent layers of the application models: GRU, LSTM and a Bidirectional
wrapper for sequences padded at the end, with the helpers that build them."""

import keras
from keras import ops

from keras_rnnattn._backend import own_rnn_kernels, rnn_kind, run_rnn


def reverse_by_length(x, lengths):
    """Reverses the first `lengths[b]` steps of each row, leaving the padding in place.

    Applied twice it is the identity. A backward RNN run on the result reads each
    sentence from its last real token, without a masked (slow) RNN.

    Args:
        x: `(B, S, d)`.
        lengths: int `(B,)`.

    Returns:
        `(B, S, d)`.
    """
    steps = ops.expand_dims(ops.arange(ops.shape(x)[1], dtype="int32"), 0)  # (1, S)
    lengths = ops.expand_dims(ops.cast(lengths, "int32"), 1)  # (B, 1)
    index = ops.where(steps < lengths, lengths - 1 - steps, steps)  # (B, S)
    return ops.take_along_axis(x, ops.expand_dims(index, -1), axis=1)


def gather_step(x, index):
    """`x[b, index[b]]` for `x` `(B, S, d)` and int `index` `(B,)`: `(B, d)`."""
    index = ops.reshape(ops.cast(index, "int32"), (-1, 1, 1))
    return ops.take_along_axis(x, index, axis=1)[:, 0]


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class Bidirectional(keras.layers.Bidirectional):
    """`keras.layers.Bidirectional` for sequences padded at the end, with no masked RNN.

    Given a mask, Keras runs both RNNs masked, and a masked GRU or LSTM falls
    back to a Python loop over the steps on PyTorch's CPU backend. There
    (`own_rnn_kernels`) this layer runs the forward RNN over the padded
    rows as they are (the padding comes last, so it never reaches a real step)
    and the backward RNN over each row reversed within its length
    (`reverse_by_length`), both through `run_rnn` (PyTorch's fused kernel): a
    train step 1.7-2.0x faster (`benchmarks/rnn_encoders.py`). The outputs are
    the masked layer's: the same at the real steps, zeros at the padded ones.
    On JAX and TensorFlow, whose masked layers were as fast or faster, it runs
    as Keras's layer does. The weights are Keras's `Bidirectional`'s own, and
    the class has its name, so weights files (whose paths name each layer's
    class) saved from either load into the other.

    The mask must be True on a prefix of each row (padding at the end only).
    Calls without a mask, with initial states, and layers with `return_state`,
    `return_sequences=False` or a merge mode other than `"concat"` run as
    `keras.layers.Bidirectional`.

    Given a `backward_layer`, both layers are used as they are. Keras's layer
    copies `layer` through `keras.saving.serialize_keras_object`, which
    imports TensorFlow, when it is installed, on every backend (seconds, on
    JAX or PyTorch): `recurrent_encoder` and `from_config` give both layers,
    so that building or loading a model never does.

    Args:
        layer: a `keras.layers.GRU` or `keras.layers.LSTM` with
            `return_sequences=True`, as for `keras.layers.Bidirectional`.
        merge_mode: how the two directions are combined, as for
            `keras.layers.Bidirectional` (`"concat"` by default).
        weights: optional initial weights, as for
            `keras.layers.Bidirectional`.
        backward_layer: optional layer reading the sequences backwards
            (`go_backwards=True`), used as it is together with `layer`; by
            default a copy of `layer` (Keras's way).
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`...).

    Call arguments:
        sequences: `(B, S, d)`.
        mask: optional boolean `(B, S)`, True at the real steps.
        training: bool.

    Returns:
        `(B, S, 2 units)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> layer = Bidirectional(keras.layers.GRU(3, return_sequences=True))
    >>> x = np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32")
    >>> mask = np.array([[True, True, True, False], [True, True, False, False]])
    >>> out = ops.convert_to_numpy(layer(x, mask=mask))
    >>> out.shape, float(np.abs(out[1, 2:]).max())
    ((2, 4, 6), 0.0)
    """

    def __init__(
        self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs
    ):
        if backward_layer is None or not isinstance(
            layer, keras.layers.Layer
        ):  # Keras's own way, and its errors
            super().__init__(
                layer,
                merge_mode=merge_mode,
                weights=weights,
                backward_layer=backward_layer,
                **kwargs,
            )
            return
        # `keras.layers.Bidirectional.__init__` without its copy of `layer`.
        if not isinstance(backward_layer, keras.layers.Layer):
            raise ValueError(
                "`backward_layer` must be a `keras.layers.Layer`. "
                f"Received: backward_layer={backward_layer!r}"
            )
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(
                'merge_mode must be one of "sum", "mul", "ave", "concat" or None. '
                f"Received: merge_mode={merge_mode!r}"
            )
        keras.layers.Layer.__init__(self, **kwargs)
        self.forward_layer = layer
        self.backward_layer = backward_layer
        self._verify_layer_config()
        for rnn in (layer, backward_layer):
            if getattr(rnn, "zero_output_for_mask", None) is not None:
                rnn.zero_output_for_mask = rnn.return_sequences
        self.merge_mode = merge_mode
        if weights:
            half = len(weights) // 2
            layer.initial_weights = weights[:half]
            backward_layer.initial_weights = weights[half:]
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        self.input_spec = layer.input_spec

    def call(self, sequences, initial_state=None, mask=None, training=None):
        if (
            mask is None
            or not own_rnn_kernels()
            or initial_state is not None
            or self.return_state
            or not self.return_sequences
            or self.merge_mode != "concat"
        ):
            return super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        mask = ops.cast(mask, "bool")
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)  # (B,)
        forward = run_rnn(self.forward_layer, sequences, training=training)
        backward = run_rnn(
            self.backward_layer,
            reverse_by_length(sequences, lengths),
            training=training,
        )
        backward = reverse_by_length(backward, lengths)  # (B, S, units)
        outputs = ops.concatenate(
            [
                ops.cast(forward, self.compute_dtype),
                ops.cast(backward, self.compute_dtype),
            ],
            axis=-1,
        )  # (B, S, 2 units)
        return outputs * ops.cast(ops.expand_dims(mask, -1), outputs.dtype)


class _OwnKernels:
    """The `call` of `GRU` and `LSTM` below: `run_rnn`'s fused kernel where
    `own_rnn_kernels` says so (torch), for a stock layer run unmasked over all
    steps from a zero state; Keras's own `call` otherwise."""

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if (
            mask is not None
            or initial_state is not None
            or not own_rnn_kernels()
            or rnn_kind(self) is None
            or self.go_backwards
            or self.return_state
            or not self.return_sequences
            or getattr(self, "_in_run_rnn", False)  # `run_rnn` calling the layer
        ):
            return super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        object.__setattr__(self, "_in_run_rnn", True)
        try:
            outputs = run_rnn(self, sequences, training=training)  # (B, S, units)
        finally:
            object.__setattr__(self, "_in_run_rnn", False)
        return ops.cast(outputs, self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class GRU(_OwnKernels, keras.layers.GRU):
    """`keras.layers.GRU` that runs PyTorch's fused kernel on torch (`own_rnn_kernels`).

    The same weights and outputs as Keras's layer, and its class name, so
    weights files (whose paths name each layer's class) load into either.

    Example:

    >>> import numpy as np
    >>> layer = GRU(3, return_sequences=True)
    >>> x = np.zeros((2, 4, 5), "float32")
    >>> tuple(layer(x).shape)
    (2, 4, 3)
    """


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class LSTM(_OwnKernels, keras.layers.LSTM):
    """`keras.layers.LSTM` that runs PyTorch's fused kernel on torch (`own_rnn_kernels`).

    The same weights and outputs as Keras's layer, and its class name, so
    weights files (whose paths name each layer's class) load into either.

    Example:

    >>> import numpy as np
    >>> layer = LSTM(3, return_sequences=True)
    >>> x = np.zeros((2, 4, 5), "float32")
    >>> tuple(layer(x).shape)
    (2, 4, 3)
    """


def recurrent_layer(cell, units, name, go_backwards=False):
    """This module's `GRU` or `LSTM` (`cell`), returning every step, named `name`."""
    return (GRU if cell == "gru" else LSTM)(
        units, return_sequences=True, go_backwards=go_backwards, name=name
    )


def recurrent_encoder(cell, units, bidirectional, name):
    """A GRU or LSTM returning every step, named `name`; a bidirectional one is a
    `Bidirectional` (this module's) of `forward_<cell>` and `backward_<cell>`,
    the layers and names that `keras.layers.Bidirectional` would make, built
    here so that nothing is copied through a config."""
    if bidirectional:
        return Bidirectional(
            recurrent_layer(cell, units, name=f"forward_{cell}"),
            backward_layer=recurrent_layer(
                cell, units, name=f"backward_{cell}", go_backwards=True
            ),
            name=name,
        )
    return recurrent_layer(cell, units, name=name)
