"""Small layers shared by the application models: padding masks, RNN encoders, last outputs."""

import keras
from keras import ops

from keras_rnnattn._backend import own_rnn_kernels as _own_rnn_kernels
from keras_rnnattn._backend import rnn_kind as _rnn_kind
from keras_rnnattn._backend import run_rnn as _run_rnn
from keras_rnnattn.models._seq2seq_parts import reverse_by_length


def embedding_initializer():
    """N(0, 1) token embeddings, as in PyTorch's `nn.Embedding`.

    Keras's default, U(-0.05, 0.05), feeds an RNN inputs so small that its
    states start near zero and alike at every position; attention over them then
    has nothing to tell positions apart and learns far more slowly.
    """
    return keras.initializers.RandomNormal(stddev=1.0)


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class PaddingMask(keras.layers.Layer):
    """Boolean `(B, S)` mask of the real tokens: True where the id is not `pad_id`.

    Args:
        pad_id: int, the id of the padding token.
        **kwargs: base layer arguments.

    Call arguments:
        token_ids: integer `(B, S)`.

    Returns:
        Boolean `(B, S)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> out = PaddingMask()(np.array([[4, 2, 0]]))
    >>> ops.convert_to_numpy(out).tolist()
    [[True, True, False]]
    """

    def __init__(self, pad_id=0, **kwargs):
        super().__init__(**kwargs)
        self.pad_id = int(pad_id)

    def call(self, token_ids):
        return ops.not_equal(token_ids, self.pad_id)

    def compute_output_spec(self, token_ids):
        return keras.KerasTensor(token_ids.shape, dtype="bool")

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id})
        return config


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class MaskedZeros(keras.layers.Layer):
    """Sets the padded steps of a sequence to zero (the mask stops here).

    A 1-D convolution with `"same"` padding then sees zeros past the end of
    every sequence, exactly as it would for the sequence on its own.

    Call arguments:
        inputs: `(B, S, d)`.
        mask: boolean `(B, S)`.

    Returns:
        `(B, S, d)`, zero where `mask` is False.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> x = np.ones((1, 3, 2), "float32")
    >>> out = MaskedZeros()(x, mask=np.array([[True, True, False]]))
    >>> ops.convert_to_numpy(out)[0, :, 0].tolist()
    [1.0, 1.0, 0.0]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return inputs
        keep = ops.cast(ops.expand_dims(mask, -1), inputs.dtype)  # (B, S, 1)
        return inputs * keep

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return input_shape


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class LastOutput(keras.layers.Layer):
    """The output of an RNN at the last real step of each sequence.

    Sequences are padded at the end. For a bidirectional RNN whose outputs are
    `[forward; backward]` (`backward_units` set), the forward half is read at
    the last real step and the backward half at step 0, where the backward RNN
    ends: the final state of each direction.

    Args:
        backward_units: optional int, the size of the backward half.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(B, S, d)`.
        mask: optional boolean `(B, S)`; without it the last step is `S - 1`.

    Returns:
        `(B, d)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> x = np.arange(6, dtype="float32").reshape(1, 3, 2)
    >>> out = LastOutput()(x, mask=np.array([[True, True, False]]))
    >>> ops.convert_to_numpy(out).tolist()
    [[2.0, 3.0]]
    """

    def __init__(self, backward_units=None, **kwargs):
        super().__init__(**kwargs)
        self.backward_units = backward_units
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            last = inputs[:, -1, :]  # (B, d)
        else:
            lengths = ops.sum(ops.cast(mask, "int32"), axis=1)  # (B,)
            index = ops.maximum(lengths - 1, 0)[:, None, None]  # (B, 1, 1)
            last = ops.take_along_axis(inputs, index, axis=1)[:, 0, :]  # (B, d)
        if self.backward_units:
            split = inputs.shape[-1] - self.backward_units
            last = ops.concatenate(
                [last[:, :split], inputs[:, 0, split:]], axis=-1
            )  # (B, d)
        return last

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"backward_units": self.backward_units})
        return config


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class MaskedMean(keras.layers.Layer):
    """The mean over the real steps of a sequence (a baseline pooling).

    Call arguments:
        inputs: `(B, S, d)`.
        mask: optional boolean `(B, S)`.

    Returns:
        `(B, d)`; zeros for a sequence with no real step.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> x = np.arange(6, dtype="float32").reshape(1, 3, 2)
    >>> out = MaskedMean()(x, mask=np.array([[True, True, False]]))
    >>> ops.convert_to_numpy(out).tolist()
    [[1.0, 2.0]]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.mean(inputs, axis=1)
        keep = ops.cast(ops.expand_dims(mask, -1), inputs.dtype)  # (B, S, 1)
        total = ops.sum(inputs * keep, axis=1)  # (B, d)
        count = ops.maximum(ops.sum(keep, axis=1), 1.0)  # (B, 1)
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class Bidirectional(keras.layers.Bidirectional):
    """`keras.layers.Bidirectional` for sequences padded at the end, with no masked RNN.

    Given a mask, Keras runs both RNNs masked, and a masked GRU or LSTM falls
    back to a Python loop over the steps on PyTorch's CPU backend. There
    (`_own_rnn_kernels`) this layer runs the forward RNN over the padded
    rows as they are (the padding comes last, so it never reaches a real step)
    and the backward RNN over each row reversed within its length
    (`reverse_by_length`), both through `_run_rnn` (PyTorch's fused kernel): a
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

    Args:
        layer: a `keras.layers.GRU` or `keras.layers.LSTM` with
            `return_sequences=True`, as for `keras.layers.Bidirectional`.
        **kwargs: `keras.layers.Bidirectional` arguments.

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

    def call(self, sequences, initial_state=None, mask=None, training=None):
        if (
            mask is None
            or not _own_rnn_kernels()
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
        forward = _run_rnn(self.forward_layer, sequences, training=training)
        backward = _run_rnn(
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
    """The `call` of `GRU` and `LSTM` below: `_run_rnn`'s fused kernel where
    `_own_rnn_kernels` says so (torch), for a stock layer run unmasked over all
    steps from a zero state; Keras's own `call` otherwise."""

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if (
            mask is not None
            or initial_state is not None
            or not _own_rnn_kernels()
            or _rnn_kind(self) is None
            or self.go_backwards
            or self.return_state
            or not self.return_sequences
            or getattr(self, "_in_run_rnn", False)  # `_run_rnn` calling the layer
        ):
            return super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        object.__setattr__(self, "_in_run_rnn", True)
        try:
            outputs = _run_rnn(self, sequences, training=training)  # (B, S, units)
        finally:
            object.__setattr__(self, "_in_run_rnn", False)
        return ops.cast(outputs, self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class GRU(_OwnKernels, keras.layers.GRU):
    """`keras.layers.GRU` that runs PyTorch's fused kernel on torch (`_own_rnn_kernels`).

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
    """`keras.layers.LSTM` that runs PyTorch's fused kernel on torch (`_own_rnn_kernels`).

    The same weights and outputs as Keras's layer, and its class name, so
    weights files (whose paths name each layer's class) load into either.

    Example:

    >>> import numpy as np
    >>> layer = LSTM(3, return_sequences=True)
    >>> x = np.zeros((2, 4, 5), "float32")
    >>> tuple(layer(x).shape)
    (2, 4, 3)
    """


def recurrent_layer(cell, units, name):
    """This module's `GRU` or `LSTM` (`cell`), returning every step, named `name`."""
    return (GRU if cell == "gru" else LSTM)(units, return_sequences=True, name=name)


def recurrent_encoder(cell, units, bidirectional, name):
    """A GRU or LSTM returning every step, named `name`; a bidirectional one is a
    `Bidirectional` (this module's) whose RNNs are named after the cell."""
    if bidirectional:
        return Bidirectional(recurrent_layer(cell, units, name=cell), name=name)
    return recurrent_layer(cell, units, name=name)
