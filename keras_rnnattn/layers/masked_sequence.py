"""Layers over sequences padded at the end: the padding mask, zeroed padding,
the last real output and the mean over the real steps."""

import keras
from keras import ops


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
