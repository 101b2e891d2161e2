"""A beam step's best continuations, found in the best chunks of the logits."""

from keras import ops

from keras_rnnattn._backend import device_scalar, op_by_op

# The tokens of one beam a chunk holds.
CHUNK_SIZE = 128
# Fewer chunks than this per candidate: every score is written out and sorted.
MIN_CHUNKS_PER_CANDIDATE = 4


def best_candidates(logits, alive_log_probs, num_candidates, chunk_size=CHUNK_SIZE):
    """The `num_candidates` best continuations of each row's beams.

    A continuation's score is its beam's log-probability plus the token's
    log-softmax, `alive + ((x - max) - log(sum(exp(x - max))))` over the beam's
    logits `x`. Where the `(B, K * V)` scores are many and the ops fuse
    (JAX, TensorFlow, compiled torch; eager torch runs the fewest ops,
    `op_by_op`), they are never written out: the best continuations lie in
    the `C` chunks (runs of `chunk_size` tokens of one beam) whose best
    scores are largest, since a score outside them is beaten by those `C`
    chunk bests. A chunk's best
    score is that of its largest logit (each step of the formula rounds
    monotonically), so one pass over the logits gives every chunk's best
    (and the beam's maximum, their largest), a second the log-softmax's sum,
    and only the `C * chunk_size` scores of the
    chosen chunks are computed and sorted (a beam-4 step of a 4,000-token
    model: the `(256, 4,000)` log-softmax and the top-k of 64 x 16,000 scores
    become reductions over the logits and a top-k of 64 x 1,024). The chunks
    are taken in the order of the row, so the result is `ops.top_k` of the
    written-out scores, ties included on JAX and TensorFlow (the lower
    index first); torch's `topk` orders ties freely either way.

    Args:
        logits: float `(B * K, V)`, the beams' next-token logits (or
            log-probabilities), with a static V.
        alive_log_probs: float32 `(B, K)`, the beams' log-probabilities.
        num_candidates: Python int C, 1 <= C <= K * V.
        chunk_size: Python int, the tokens per chunk.

    Returns:
        `(scores, ids)`: `(B, C)`, best first, and their int32 indices into
        the `K * V` continuations of the row (`beam * V + token`).

    Example:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(2 * 4, 3000)).astype("float32")
    >>> alive = np.log(rng.dirichlet(np.ones(4), size=2)).astype("float32")
    >>> scores, ids = best_candidates(logits, alive, 8)
    >>> shifted = logits - logits.max(-1, keepdims=True)
    >>> log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    >>> every = (alive[:, :, None] + log_probs.reshape(2, 4, 3000)).reshape(2, -1)
    >>> want = np.argsort(-every, axis=-1, kind="stable")[:, :8]
    >>> bool(np.all(ops.convert_to_numpy(ids) == want))
    True
    """
    logits = ops.convert_to_tensor(logits)
    alive_log_probs = ops.convert_to_tensor(alive_log_probs)
    k = ops.shape(alive_log_probs)[1]
    v = logits.shape[-1]
    num_chunks = -(-v // chunk_size)
    few = k * num_chunks < MIN_CHUNKS_PER_CANDIDATE * num_candidates
    if few or op_by_op():
        log_probs = ops.reshape(ops.log_softmax(logits, axis=-1), (-1, k, v))
        scores = alive_log_probs[:, :, None] + log_probs  # (B, K, V)
        scores, ids = ops.top_k(ops.reshape(scores, (-1, k * v)), num_candidates)
        return scores, ops.cast(ids, "int32")

    # Per beam: each chunk's largest logit, the maximum (the largest of
    # those, so the logits are read twice, not three times), the log of the
    # shifted exponentials' sum.
    whole = v // chunk_size  # chunks without the last, shorter one
    chunk_top = ops.amax(
        ops.reshape(logits[:, : whole * chunk_size], (-1, whole, chunk_size)), axis=-1
    )  # (B * K, whole)
    if whole < num_chunks:
        rest = ops.amax(logits[:, whole * chunk_size :], axis=-1, keepdims=True)
        chunk_top = ops.concatenate([chunk_top, rest], axis=-1)  # (B * K, G)
    top = ops.amax(chunk_top, axis=-1)  # (B * K,)
    log_sum = ops.log(ops.sum(ops.exp(logits - top[:, None]), axis=-1))  # (B * K,)
    alive = ops.reshape(alive_log_probs, (-1,))  # (B * K,)

    # The log-softmax's formula, as `ops.log_softmax` rounds it.
    chunk_scores = alive[:, None] + (
        (chunk_top - top[:, None]) - log_sum[:, None]
    )  # (B * K, G)
    _, chosen = ops.top_k(
        ops.reshape(chunk_scores, (-1, k * num_chunks)), num_candidates
    )  # (B, C)
    chosen = ops.sort(ops.cast(chosen, "int32"), axis=-1)  # in the row's order
    g = device_scalar(num_chunks, "int32")
    beam = ops.floor_divide(chosen, g)  # (B, C) in [0, K)
    first = ops.mod(chosen, g) * chunk_size  # (B, C) the chunk's first token
    tokens = first[:, :, None] + ops.arange(chunk_size, dtype="int32")  # (B, C, c)
    real = tokens < v
    tokens = ops.minimum(tokens, device_scalar(v - 1, "int32"))
    batch_size = ops.shape(chosen)[0]
    rows = beam + ops.arange(batch_size, dtype="int32")[:, None] * k  # (B, C)
    of = rows[:, :, None]  # (B, C, 1) the flat beam of each chosen chunk
    x = ops.take(ops.reshape(logits, (-1,)), of * v + tokens)  # (B, C, c)
    x = ops.take(alive, of) + ((x - ops.take(top, of)) - ops.take(log_sum, of))
    x = ops.where(real, x, device_scalar(float("-inf"), x.dtype))
    scores, at = ops.top_k(ops.reshape(x, (batch_size, -1)), num_candidates)  # (B, C)
    at = ops.cast(at, "int32")
    c = device_scalar(chunk_size, "int32")
    which = ops.floor_divide(at, c)  # (B, C) among the chosen chunks
    ids = (
        ops.take_along_axis(beam, which, axis=1) * v
        + ops.take_along_axis(first, which, axis=1)
        + ops.mod(at, c)
    )
    return scores, ids
