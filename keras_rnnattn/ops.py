"""Numerical building blocks shared by the layers and models.

keras.ops only. `dense_2d`, which fuses the bias on torch, and `device_scalar`
live with the other backend helpers in `keras_rnnattn._backend` and are
importable from here too.
"""

import keras  # noqa: F401 (the docstring examples use it)
from keras import ops

from keras_rnnattn._backend import dense_2d, device_scalar  # noqa: F401 (re-exported)


def large_negative(dtype):
    """The most negative score that is safe to add in `dtype` (float16 tops at 65504)."""
    dtype = str(dtype)
    if "float16" in dtype and "bfloat16" not in dtype:
        return -65500.0
    return -1e9


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


def _tiny(dtype):
    """The smallest positive normal number of a float dtype (NumPy's `finfo.tiny`)."""
    dtype = str(dtype)
    if "bfloat16" in dtype:
        return 1.1754944e-38  # bfloat16 has float32's exponent range
    if "float16" in dtype:
        return 6.1035156e-05
    if "float64" in dtype:
        return 2.2250738585072014e-308
    return 1.1754944e-38


def _exclusive(x, fill, axis):
    """`x` shifted one place along `axis`: `fill` first, the last entry dropped."""
    x = ops.moveaxis(x, axis, -1)
    first = ops.zeros_like(x[..., :1]) + fill
    shifted = ops.concatenate([first, x[..., :-1]], axis=-1)
    return ops.moveaxis(shifted, -1, axis)


def safe_cumprod(x, axis=-1, exclusive=False):
    """The cumulative product of `x` along `axis`, computed in log space.

    `exp(cumsum(log(clip(x, tiny, 1))))`, with `tiny` the smallest positive
    normal number of the dtype: tfa's `tfa.seq2seq.safe_cumprod` (and its
    numerics), which monotonic attention uses so that neither the product nor
    its gradient underflows or divides by zero. Entries are clipped into
    `[tiny, 1]`: a 0 counts as `tiny` (the products after it are tiny, not 0)
    and entries above 1 count as 1, so it suits probabilities only.

    Args:
        x: float tensor of any rank, entries in [0, 1].
        axis: the axis of the product.
        exclusive: bool, the product of the entries before each one (the
            first is 1), as `tf.math.cumprod(..., exclusive=True)`.

    Returns:
        A tensor of the shape and dtype of `x`.

    Example:

    >>> x = keras.ops.convert_to_tensor([[0.5, 0.5, 1.0, 0.25]])
    >>> keras.ops.convert_to_numpy(safe_cumprod(x)).round(6)
    array([[0.5   , 0.25  , 0.25  , 0.0625]], dtype=float32)
    >>> keras.ops.convert_to_numpy(safe_cumprod(x, exclusive=True)).round(6)
    array([[1.  , 0.5 , 0.25, 0.25]], dtype=float32)
    """
    x = ops.convert_to_tensor(x)
    logs = ops.log(ops.clip(x, _tiny(x.dtype), 1.0))
    if exclusive:
        logs = _exclusive(logs, 0.0, axis)
    return ops.exp(ops.cumsum(logs, axis=axis))


MONOTONIC_MODES = ("parallel", "recursive", "hard")


def monotonic_attention(p_choose_i, previous_attention, mode):
    """The monotonic attention distribution of Raffel et al. (2017).

    "Online and Linear-Time Attention by Enforcing Monotonic Alignments"
    (Raffel, Luong, Liu, Weiss and Eck, ICML 2017), eq. 10-12: the decoder
    scans the memory left to right from where it stopped at the previous step,
    stopping at position j with probability `p_choose_i[j]`. With a the
    previous attention and p the choosing probabilities, the expected
    attention is

        q_j = (1 - p_{j-1}) q_{j-1} + a_j,   attention_j = p_j q_j

    (q_0 = a_0). Mass that passes the last position without stopping is lost:
    a row's weights sum to at most 1. tfa's `tfa.seq2seq.monotonic_attention`,
    mode for mode and formula for formula:

    - `"recursive"`: the recurrence above, a scan over the memory positions
      (`keras.ops.scan`): exact, the slowest.
    - `"parallel"`: its closed form, `p_j · cumprod_excl(1 - p)_j ·
      cumsum(a / clip(cumprod_excl(1 - p), 1e-10, 1))_j` with `safe_cumprod`:
      fast, but inexact where the products get tiny (long memories, `p`
      close to 1).
    - `"hard"`: for `p` of 0s and 1s and a one-hot (or zero) `a`: the first
      position at or after the previous one whose `p` is 1 (all-zero weights
      if there is none). Exact; it reads nothing before the previous
      position, so a decoder can attend online.

    Args:
        p_choose_i: `(..., S)` choosing probabilities in [0, 1] (0 or 1 for
            `"hard"`).
        previous_attention: `(..., S)`, the previous step's attention; one-hot
            on the first position before the first step.
        mode: `"parallel"`, `"recursive"` or `"hard"`.

    Returns:
        The attention `(..., S)`, of the dtype of `p_choose_i`.

    Example:

    >>> p = keras.ops.convert_to_tensor([[0.5, 0.5, 0.5]])
    >>> first = keras.ops.convert_to_tensor([[1.0, 0.0, 0.0]])
    >>> keras.ops.convert_to_numpy(monotonic_attention(p, first, "parallel")).round(6)
    array([[0.5  , 0.25 , 0.125]], dtype=float32)
    >>> hard_p = keras.ops.convert_to_tensor([[1.0, 0.0, 1.0]])
    >>> second = keras.ops.convert_to_tensor([[0.0, 1.0, 0.0]])
    >>> keras.ops.convert_to_numpy(monotonic_attention(hard_p, second, "hard"))
    array([[0., 0., 1.]], dtype=float32)
    """
    if mode not in MONOTONIC_MODES:
        raise ValueError(
            f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}"
        )
    p_choose_i = ops.convert_to_tensor(p_choose_i)
    previous_attention = ops.cast(previous_attention, p_choose_i.dtype)
    if mode == "recursive":
        # [1, 1 - p_0, ..., 1 - p_{S-2}]: the carry's factor at each position.
        shifted = _exclusive(1.0 - p_choose_i, 1.0, -1)  # (..., S)

        def scan_step(q, inputs):
            one_minus_p, attention = inputs
            q = one_minus_p * q + attention  # (...)
            return q, q

        _, q = ops.scan(
            scan_step,
            ops.zeros_like(p_choose_i[..., 0]),
            (ops.moveaxis(shifted, -1, 0), ops.moveaxis(previous_attention, -1, 0)),
        )  # (S, ...)
        return p_choose_i * ops.moveaxis(q, 0, -1)
    if mode == "parallel":
        cumprod_1mp = safe_cumprod(1.0 - p_choose_i, axis=-1, exclusive=True)
        return (
            p_choose_i
            * cumprod_1mp
            * ops.cumsum(
                previous_attention / ops.clip(cumprod_1mp, 1e-10, 1.0), axis=-1
            )
        )
    # "hard": no choice before the previous position; the first choice after it.
    p_choose_i = p_choose_i * ops.cumsum(previous_attention, axis=-1)
    # The exclusive product of (1 - p) over 0s and 1s is 1 until the first 1: an
    # exclusive sum of 0 (a sum, which TFLite has as a builtin op; a product not).
    earlier = _exclusive(ops.cumsum(p_choose_i, axis=-1), 0.0, -1)  # (..., S)
    return p_choose_i * ops.cast(ops.less(earlier, 0.5), p_choose_i.dtype)
