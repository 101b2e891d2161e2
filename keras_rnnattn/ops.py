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


def _masked_float32(scores, mask):
    """Scores in float32 with masked entries at the large negative, and the mask.

    Returns `(scores, keep)`: `keep` is the float32 mask broadcast to the shape
    of `scores` (None without a mask).
    """
    scores = ops.cast(scores, "float32")
    if mask is None:
        return scores, None
    mask = ops.cast(mask, "bool")
    scores = ops.where(
        mask, scores, device_scalar(large_negative("float32"), "float32")
    )
    keep = ops.cast(mask, "float32") + ops.zeros_like(scores)
    return scores, keep


def hardmax(scores, mask=None, axis=-1):
    """One-hot of the highest-scoring entry over `axis` where `mask` is True.

    Ties go to the first (lowest) index, as `one_hot(argmax(scores))` (tfa's
    `hardmax`), on every backend. Written with a max, a comparison and a
    cumulative sum, without `argmax` (which TFLite does not convert). Masked
    entries get exactly 0, and a row whose entries are all masked gets all-zero
    weights. The weights are piecewise constant in the scores: no gradient
    flows through them.

    Args:
        scores: float tensor of any rank.
        mask: optional boolean tensor broadcastable to `scores`; True keeps.
        axis: the axis to take the maximum over.

    Returns:
        Weights of the same shape and dtype as `scores`: one 1 per row (none in
        an all-masked row), zeros elsewhere.

    Example:

    >>> scores = keras.ops.convert_to_tensor([[1.0, 3.0, 3.0, 2.0]])
    >>> keras.ops.convert_to_numpy(hardmax(scores))
    array([[0., 1., 0., 0.]], dtype=float32)
    >>> mask = keras.ops.convert_to_tensor([[True, False, False, True]])
    >>> keras.ops.convert_to_numpy(hardmax(scores, mask))
    array([[0., 0., 0., 1.]], dtype=float32)
    """
    dtype = scores.dtype
    scores, keep = _masked_float32(scores, mask)
    is_max = ops.equal(scores, ops.max(scores, axis=axis, keepdims=True))
    if keep is not None:
        is_max = ops.logical_and(is_max, ops.cast(keep, "bool"))
    is_max = ops.cast(is_max, "int32")
    # The first maximum is the one whose running count of maxima is 1.
    first = is_max * ops.cast(ops.equal(ops.cumsum(is_max, axis=axis), 1), "int32")
    return ops.cast(first, dtype)


def sparsemax(scores, mask=None, axis=-1):
    """Sparsemax over `axis`: the Euclidean projection of `scores` onto the simplex.

    Martins and Astudillo, "From Softmax to Sparsemax: A Sparse Model of
    Attention and Multi-Label Classification" (ICML 2016), Algorithm 1: with z
    sorted in decreasing order, k(z) = max{k : 1 + k z_(k) > Σ_{j≤k} z_(j)},
    τ = (Σ_{j≤k(z)} z_(j) − 1) / k(z) and p = max(z − τ, 0). Unlike softmax it
    gives exactly 0 to entries far enough below the best.

    Masked entries are left out of the projection (they are not in the simplex,
    rather than zeroed afterwards), so the unmasked weights sum to 1; a row
    whose entries are all masked gets all-zero weights. The projection runs in
    float32 whatever the scores' dtype. Its gradient is the paper's: for the
    entries in the support S, ∂p_i/∂z_j = δ_ij − 1/|S|; 0 elsewhere.

    (`keras.ops.sparsemax` of Keras 3.15 and earlier computes τ from the sum of
    the cumulative sums: its weights do not sum to 1 once the support has more
    than one entry.)

    Args:
        scores: float tensor of any rank.
        mask: optional boolean tensor broadcastable to `scores`; True keeps.
        axis: the axis to project over.

    Returns:
        Weights of the same shape and dtype as `scores`.

    Example:

    >>> scores = keras.ops.convert_to_tensor([[0.0, 0.5, 1.0], [3.0, 0.0, -1.0]])
    >>> keras.ops.convert_to_numpy(sparsemax(scores))
    array([[0.  , 0.25, 0.75],
           [1.  , 0.  , 0.  ]], dtype=float32)
    >>> mask = keras.ops.convert_to_tensor([[True, True, False], [False, True, True]])
    >>> keras.ops.convert_to_numpy(sparsemax(scores, mask))
    array([[0.25, 0.75, 0.  ],
           [0.  , 1.  , 0.  ]], dtype=float32)
    """
    dtype = scores.dtype
    scores, keep = _masked_float32(scores, mask)
    # z sorted in decreasing order; masked entries, at the large negative, last.
    z = ops.negative(ops.sort(ops.negative(scores), axis=axis))
    k = ops.cumsum(ops.ones_like(z), axis=axis)  # 1, 2, ..., n
    support = ops.greater(1.0 + k * z, ops.cumsum(z, axis=axis))
    if keep is not None:
        # Only the unmasked entries, the first sum(keep) of z, can be in it.
        count = ops.sum(keep, axis=axis, keepdims=True)
        support = ops.logical_and(support, ops.less_equal(k, count))
    k_z = ops.sum(ops.cast(support, "float32"), axis=axis, keepdims=True)
    total = ops.sum(ops.where(support, z, 0.0), axis=axis, keepdims=True)
    # k_z is 0 only in an all-masked row, whose weights are zeroed below.
    tau = (total - 1.0) / ops.maximum(k_z, 1.0)
    weights = ops.maximum(scores - tau, 0.0)
    if keep is not None:
        weights = weights * keep
    return ops.cast(weights, dtype)


def causal_mask(query_length, key_length):
    """Boolean (query_length, key_length) mask, True where key position j <= i."""
    i = ops.arange(query_length)[:, None]
    j = ops.arange(key_length)[None, :]
    return ops.greater_equal(i, j)
