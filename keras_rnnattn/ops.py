"""Numerical building blocks shared by the layers and models.

keras.ops only. `dense_2d`, which fuses the bias on torch, lives with the other
backend branches in `keras_rnnattn._backend` and is importable from here too.
"""

import keras  # noqa: F401 (the docstring examples use it)
from keras import ops

from keras_rnnattn._backend import dense_2d  # noqa: F401 (re-exported)


def large_negative(dtype):
    """The most negative score that is safe to add in `dtype` (float16 tops at 65504)."""
    dtype = str(dtype)
    if "float16" in dtype and "bfloat16" not in dtype:
        return -65500.0
    return -1e9


def device_scalar(value, dtype):
    """`value` as a 0-d tensor of `dtype`, made where the computation runs.

    A Python number given to a `keras.ops` function is converted to a tensor
    first; under torch on a GPU that is a host-to-device copy, which waits for
    every queued kernel (one sync per call: in a decoder loop, one per step).
    A zero made on the device plus the number is the same value with no copy
    (a fill and an add; folded into a constant where the backend compiles).

    Args:
        value: a Python int or float.
        dtype: the tensor's dtype.

    Returns:
        A 0-d tensor.

    Example:

    >>> ids = keras.ops.convert_to_tensor([[5, 0]], "int32")
    >>> keras.ops.convert_to_numpy(keras.ops.not_equal(ids, device_scalar(0, "int32")))
    array([[ True, False]])
    """
    return ops.zeros((), dtype) + value


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` where `mask` is False gets weight exactly 0.

    The softmax runs in float32 whatever the scores' dtype (so float16 and bfloat16
    stay finite), and a row whose entries are all masked gets all-zero weights
    rather than a uniform row or NaN.

    Args:
        scores: float tensor of any rank.
        mask: optional boolean tensor broadcastable to `scores`; True keeps.
        axis: the axis to normalise over.

    Returns:
        Weights of the same shape and dtype as `scores`.
    """
    dtype = scores.dtype
    scores = ops.cast(scores, "float32")
    if mask is None:
        return ops.cast(ops.softmax(scores, axis=axis), dtype)
    mask = ops.cast(mask, "bool")
    scores = ops.where(
        mask, scores, device_scalar(large_negative("float32"), "float32")
    )
    weights = ops.softmax(scores, axis=axis)
    weights = weights * ops.cast(mask, weights.dtype)
    return ops.cast(weights, dtype)


def causal_mask(query_length, key_length):
    """Boolean (query_length, key_length) mask, True where key position j <= i."""
    i = ops.arange(query_length)[:, None]
    j = ops.arange(key_length)[None, :]
    return ops.greater_equal(i, j)
