"""Scalars made on the device where the computation runs (no host-to-device copy)."""

import keras  # noqa: F401 (the docstring example uses it)
from keras import ops


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
