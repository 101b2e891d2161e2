"""Random sampling with temperature, top-k and nucleus (top-p) filtering."""

import numbers

import keras
from keras import ops

from keras_rnnattn.decoding._common import (
    check_end_id,
    check_int,
    token_loop,
    vocabulary_size,
)


def sample(
    next_fn,
    state,
    start_ids,
    end_id,
    max_length,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    return_alignments=False,
    return_state=False,
):
    """Decodes by drawing every token from the model's (filtered) distribution.

    At every step the logits are divided by `temperature`, then restricted to
    the `top_k` most probable tokens, then to the nucleus: the smallest set of
    most probable tokens whose probability reaches `top_p` (Holtzman et al.,
    2020), measured after the top-k cut. Tokens tied with the last one kept are
    kept too. The token is drawn from the softmax of what remains.

    Randomness: all the uniform numbers are drawn before the loop, one per row
    and step, with `keras.random.uniform((max_length, B), seed=seed)`; each step
    turns its number into a token by inverting the cumulative distribution. The
    loop itself is therefore deterministic, which works on every backend and
    under jit, and the same int seed gives the same tokens on every call,
    eagerly or compiled (on TensorFlow the Philox generator is named so that
    XLA does not switch to another one). The numbers differ between backends,
    whose generators differ: a seed repeats the tokens on one backend, not
    across JAX, TensorFlow and torch.

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state)` or
            `(logits, state, alignment)`: `token_ids` `(B,)` int32, `logits`
            `(B, V)`, `alignment` `(B, S)` attention weights of this step (or a
            list of them); the returned state must keep the structure, shapes
            and dtypes of the one it received. The alignment is used only with
            `return_alignments=True`.
        state: the initial model state, any nested structure (dict, list, tuple)
            of tensors with leading dimension B (`()` for none); None leaves are
            passed through as None.
        start_ids: `(B,)` int, the token fed at the first step.
        end_id: int, the end token.
        max_length: Python int >= 1, the number of tokens produced.
        temperature: float > 0; below 1 sharpens, above 1 flattens.
        top_k: None, or int >= 1: keep only the `top_k` most probable tokens
            (`top_k=1` is greedy search).
        top_p: None, or float in (0, 1]: nucleus filtering (1 keeps everything).
        seed: int, or None for Keras's global seed generator (under `jax.jit`
            pass an int). A `keras.random.SeedGenerator` also works eagerly.
            Repeatable on one backend; each backend has its own random stream.
        return_alignments: bool; also return the alignment of every token, as
            in `greedy_search` (`next_fn` must return it).
        return_state: bool; also return the final model state, as in
            `greedy_search`: each row's at the step that drew its end token.

    Returns:
        `(tokens, scores)`: `tokens` `(B, max_length)` int32, without the start
        id, each row ending at its first `end_id` and filled with `end_id` after
        it; `scores` `(B,)` float32, the summed log-probabilities of the drawn
        tokens under the distribution they were drawn from: the
        `log_softmax` of the temperature-scaled, top-k/top-p-filtered logits
        (so the model's own log-probabilities when `temperature=1` and nothing
        is filtered, and 0 per step for `top_k=1`). With `return_alignments`
        and/or `return_state`, `(tokens, scores, alignments)`, `(tokens,
        scores, state)` or `(tokens, scores, alignments, state)`, shaped as in
        `greedy_search`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_rnnattn.decoding import sample
    >>> # A bigram model over 3 tokens, 0 the end token: row = previous token.
    >>> probs = np.array([[0.2, 0.5, 0.3], [0.5, 0.1, 0.4], [0.3, 0.6, 0.1]])
    >>> table = ops.convert_to_tensor(np.log(probs).astype("float32"))
    >>> def next_fn(token_ids, state):
    ...     return ops.take(table, token_ids, axis=0), state
    >>> start_ids = np.full((3,), 1)
    >>> tokens, scores = sample(next_fn, (), start_ids, end_id=0, max_length=5, seed=7)
    >>> tuple(tokens.shape), tuple(scores.shape)
    ((3, 5), (3,))
    >>> again, _ = sample(next_fn, (), start_ids, end_id=0, max_length=5, seed=7)
    >>> bool(np.all(ops.convert_to_numpy(tokens) == ops.convert_to_numpy(again)))
    True
    >>> # A state that counts the steps: each row's count is its length.
    >>> def counting_fn(token_ids, state):
    ...     return next_fn(token_ids, state)[0], state + 1
    >>> tokens, _, steps = sample(
    ...     counting_fn, ops.zeros((3,), "int32"), start_ids, end_id=0,
    ...     max_length=5, seed=7, return_state=True,
    ... )
    >>> lengths = np.cumsum(ops.convert_to_numpy(tokens) == 0, axis=1) <= 1
    >>> bool(np.all(ops.convert_to_numpy(steps) == lengths.sum(axis=1)))
    True
    """
    max_length = check_int("max_length", max_length)
    _check_options(end_id, temperature, top_k, top_p)
    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)
    batch_size = ops.shape(start_ids)[0]
    uniforms = draw_uniforms((max_length, batch_size), seed)  # (L, B)
    return sample_with_uniforms(
        next_fn,
        state,
        start_ids,
        end_id,
        uniforms,
        temperature,
        top_k,
        top_p,
        return_alignments=return_alignments,
        return_state=return_state,
    )


def sample_with_uniforms(
    next_fn,
    state,
    start_ids,
    end_id,
    uniforms,
    temperature=1.0,
    top_k=None,
    top_p=None,
    return_alignments=False,
    return_state=False,
):
    """`sample` with its random numbers given: uniforms `(max_length, B)` in [0, 1).

    A graph without random ops (what an exported sampler runs, and a compiled
    `AttentiveLanguageModel.generate`: the caller draws the numbers, for example
    with `draw_uniforms`). The other arguments are those of `sample`.
    """
    end_id, temperature, top_k, top_p = _check_options(
        end_id, temperature, top_k, top_p
    )
    max_length = int(uniforms.shape[0])
    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)
    uniforms = ops.cast(uniforms, "float32")

    def choose(logits, step):
        log_probs = _filtered_log_probs(logits, temperature, top_k, top_p)  # (B, V)
        token_ids = _invert_cdf(ops.exp(log_probs), ops.take(uniforms, step, axis=0))
        chosen = ops.take_along_axis(log_probs, token_ids[:, None], axis=-1)
        return token_ids, chosen[:, 0]

    return token_loop(
        next_fn,
        state,
        start_ids,
        end_id,
        max_length,
        choose,
        return_alignments=bool(return_alignments),
        return_state=bool(return_state),
    )


def _filtered_log_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """The log-probabilities `(B, V)` that `sample` draws from, -inf where filtered.

    Args:
        logits: float32 `(B, V)`.
        temperature: float > 0, divides the logits.
        top_k: None or int >= 1, applied after the temperature.
        top_p: None or float in (0, 1], applied after top-k.

    Returns:
        float32 `(B, V)` log-probabilities; filtered tokens get -inf.
    """
    if temperature != 1.0:
        logits = logits / temperature
    vocab = vocabulary_size(logits)
    if top_k is not None and top_k < vocab:
        kth_largest = ops.top_k(logits, top_k)[0][:, -1:]  # (B, 1)
        logits = ops.where(logits >= kth_largest, logits, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits = ops.top_k(logits, vocab)[0]  # (B, V), descending
        sorted_probs = ops.softmax(sorted_logits, axis=-1)
        # Probability of the tokens ranked above each one; the top one always stays.
        mass_before = ops.cumsum(sorted_probs, axis=-1) - sorted_probs  # (B, V)
        kept = ops.where(mass_before < top_p, sorted_logits, float("inf"))
        smallest_kept = ops.amin(kept, axis=-1, keepdims=True)  # (B, 1)
        logits = ops.where(logits >= smallest_kept, logits, float("-inf"))
    return ops.log_softmax(logits, axis=-1)


def draw_uniforms(shape, seed=None):
    """The uniform numbers `sample` draws: `(max_length, B)` float32 in [0, 1).

    `keras.random.uniform(shape, seed=seed)`, the same numbers eagerly and under
    XLA. On TensorFlow an int seed goes to `tf.random.stateless_uniform` with the
    Philox algorithm named: Keras leaves the algorithm to TensorFlow, which picks
    Philox eagerly but another generator under `jit_compile=True`, so the same
    seed would give other tokens once compiled. Philox is what Keras gets
    eagerly, so the numbers are those of `keras.random.uniform` there.

    Args:
        shape: `(max_length, B)`.
        seed: int, None (Keras's global seed generator) or a
            `keras.random.SeedGenerator`.

    Returns:
        A float32 tensor of `shape`, to pass to `sample_with_uniforms`.

    Example:

    >>> from keras_rnnattn.decoding.sampling import draw_uniforms
    >>> u = draw_uniforms((5, 2), seed=3)
    >>> tuple(u.shape)
    (5, 2)
    """
    # Stays here, beside the docstring that explains it: a seeded draw on
    # TensorFlow names its algorithm, so compiled and eager draws agree.
    if keras.backend.backend() == "tensorflow" and isinstance(seed, numbers.Integral):
        import tensorflow as tf

        seed = int(seed) % (2**31 - 2)  # as Keras folds seeds into int32 for XLA
        return tf.random.stateless_uniform(
            shape, seed=[seed, 0], dtype="float32", alg="philox"
        )
    return keras.random.uniform(shape, dtype="float32", seed=seed)


def _invert_cdf(probs, uniform):
    """Token ids `(B,)` int32 drawn from `probs` `(B, V)` with uniforms `(B,)` in [0, 1).

    The id is the first token whose cumulative probability exceeds
    `uniform * total`, among tokens of non-zero probability, so a filtered
    token (probability 0) can never be drawn, even through rounding.
    """
    vocab = vocabulary_size(probs)
    positions = ops.arange(vocab, dtype="int32")  # (V,)
    cdf = ops.cumsum(probs, axis=-1)  # (B, V)
    target = uniform[:, None] * cdf[:, -1:]  # (B, 1)
    possible = probs > 0.0  # (B, V)
    # `amax`/`amin`: Keras's `max`/`min` on torch break a `torch.compile` graph.
    last_possible = ops.amax(ops.where(possible, positions, 0), axis=-1, keepdims=True)
    candidate = ops.logical_or(
        ops.logical_and(cdf > target, possible), ops.equal(positions, last_possible)
    )  # (B, V); the last possible token is the fallback when rounding leaves none
    return ops.amin(ops.where(candidate, positions, vocab), axis=-1)


def _check_options(end_id, temperature, top_k, top_p):
    """The checked `(end_id, temperature, top_k, top_p)` of a sampler."""
    if top_k is not None:
        top_k = check_int("top_k", top_k)
    return (
        check_end_id(end_id),
        _check_temperature(temperature),
        top_k,
        _check_top_p(top_p),
    )


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise ValueError(
            f"`temperature` must be a Python float > 0. "
            f"Received: temperature={temperature!r}"
        )
    if not temperature > 0:
        raise ValueError(
            "`temperature` must be > 0 (use `top_k=1` or `greedy_search` for "
            f"the limit of 0). Received: temperature={temperature}"
        )
    return float(temperature)


def _check_top_p(top_p):
    if top_p is None:
        return None
    if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
        raise ValueError(
            f"`top_p` must be None or a float in (0, 1]. Received: top_p={top_p!r}"
        )
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"`top_p` must be in (0, 1]. Received: top_p={top_p}")
    return float(top_p)
