"""Greedy search: the most probable next token at every step."""

from keras_rnnattn._backend import best_log_probs
from keras_rnnattn.decoding._common import check_end_id, check_int, token_loop


def greedy_search(
    next_fn,
    state,
    start_ids,
    end_id,
    max_length,
    return_alignments=False,
    return_state=False,
):
    """Decodes by taking the most probable token at every step.

    The loop is one `keras.ops.while_loop` with static shapes, so it runs eagerly
    and under `jax.jit` / `tf.function(jit_compile=True)` alike. It stops as soon
    as every row has produced `end_id`, or after `max_length` tokens. The token is
    chosen by `_backend.best_log_probs` (`ops.top_k(logits, 1)` where a function
    may be exported, since TFLite cannot convert `argmax`; `argmax` on torch),
    which also gives its log-softmax value; among tied logits the backend's op
    decides.

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state)` or
            `(logits, state, alignment)`: `token_ids` `(B,)` int32, `logits`
            `(B, V)`, `alignment` `(B, S)` attention weights of this step (or a
            list of them, one per attention mechanism); the returned state must
            keep the structure, shapes and dtypes of the one it received. The
            alignment is used only with `return_alignments=True`.
        state: the initial model state, any nested structure (dict, list, tuple)
            of tensors with leading dimension B (`()` for none); None leaves
            (an absent mask) are passed through as None.
        start_ids: `(B,)` int, the token fed at the first step.
        end_id: int, the end token.
        max_length: Python int >= 1, the number of tokens produced.
        return_alignments: bool; also return the alignment of every token. Needs
            `next_fn` to return the alignment; `next_fn` is then called once more
            before the loop, to learn its shape (jit compiles that call away).
        return_state: bool; also return the final model state.

    Returns:
        `(tokens, scores)`: `tokens` `(B, max_length)` int32, without the start
        id, each row ending at its first `end_id` and filled with `end_id` after
        it (a row that never produces `end_id` has `max_length` real tokens);
        `scores` `(B,)` float32, the summed `log_softmax(logits)` of the tokens up
        to and including the first `end_id`. With `return_alignments` and/or
        `return_state`, `(tokens, scores, alignments)`, `(tokens, scores, state)`
        or `(tokens, scores, alignments, state)`: `alignments` `(B, max_length,
        S)` (the structure of `next_fn`'s alignment, each leaf with the
        `max_length` axis), position t the alignment of the step that produced
        token t, exactly 0 after the row's end token; `state` the state
        `next_fn` returned at the step that produced the row's end token (the
        state after the last step for a row that never ends), None leaves None.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_rnnattn.decoding import greedy_search
    >>> # A bigram model over 3 tokens, 0 the end token: row = previous token.
    >>> probs = np.array([[0.2, 0.5, 0.3], [0.5, 0.1, 0.4], [0.3, 0.6, 0.1]])
    >>> table = ops.convert_to_tensor(np.log(probs).astype("float32"))
    >>> def next_fn(token_ids, state):
    ...     return ops.take(table, token_ids, axis=0), state
    >>> tokens, scores = greedy_search(
    ...     next_fn, (), start_ids=np.array([1, 2]), end_id=0, max_length=4
    ... )
    >>> ops.convert_to_numpy(tokens).tolist()
    [[0, 0, 0, 0], [1, 0, 0, 0]]
    >>> [round(float(s), 4) for s in ops.convert_to_numpy(scores)]  # log .5, log .3
    [-0.6931, -1.204]
    >>> # The same model with an attention over 2 source positions (which depends
    >>> # on the token fed) and a state that counts the steps:
    >>> def attending_fn(token_ids, state):
    ...     logits, _ = next_fn(token_ids, state)
    ...     return logits, state + 1, ops.one_hot(token_ids % 2, 2)
    >>> tokens, scores, alignments, steps = greedy_search(
    ...     attending_fn, ops.zeros((2,), "int32"), np.array([1, 2]), end_id=0,
    ...     max_length=4, return_alignments=True, return_state=True,
    ... )
    >>> ops.convert_to_numpy(alignments)[1].tolist()  # fed 2, then 1, then ended
    [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    >>> ops.convert_to_numpy(steps).tolist()  # the steps each row took to end
    [1, 2]
    """
    end_id = check_end_id(end_id)
    max_length = check_int("max_length", max_length)

    def choose(logits, step):
        return best_log_probs(logits)  # (B,), (B,)

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
