"""Argument checks, the `next_fn` call and the token-by-token loop shared by the decoders."""

import numbers
from typing import Any, NamedTuple

import keras
from keras import ops

from keras_rnnattn.ops import device_scalar


def check_int(name, value, minimum=1):
    """Returns `value` as a Python int, or raises if it is not an int >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"`{name}` must be a Python int >= {minimum} (it fixes a static shape "
            f"or loop bound). Received: {name}={value!r}"
        )
    if value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}. Received: {name}={value}")
    return int(value)


def check_end_id(end_id):
    """Returns `end_id` as a Python int, or raises if it is not a non-negative int."""
    if isinstance(end_id, bool) or not isinstance(end_id, numbers.Integral):
        raise ValueError(
            f"`end_id` must be a Python int, the id of the end token. "
            f"Received: end_id={end_id!r}"
        )
    if end_id < 0:
        raise ValueError(f"`end_id` must be >= 0. Received: end_id={end_id}")
    return int(end_id)


def call_next_fn(next_fn, token_ids, state):
    """Calls `next_fn(token_ids, state)` and returns `(logits, state, alignment)`.

    `alignment` is None when `next_fn` returns only `(logits, state)`. The logits
    are cast to float32 so that every score is computed in float32.
    """
    outputs = next_fn(token_ids, state)
    if not isinstance(outputs, (tuple, list)) or len(outputs) not in (2, 3):
        raise ValueError(
            "`next_fn(token_ids, state)` must return `(logits, state)` or "
            "`(logits, state, alignment)`. Received an output of type "
            f"{type(outputs).__name__}"
            + (
                f" and length {len(outputs)}"
                if isinstance(outputs, (tuple, list))
                else ""
            )
        )
    logits, new_state = outputs[0], outputs[1]
    alignment = outputs[2] if len(outputs) == 3 else None
    return ops.cast(logits, "float32"), new_state, alignment


def vocabulary_size(logits):
    """The static size of the last axis of `logits` `(B, V)`, or raises."""
    size = logits.shape[-1]
    if size is None:
        raise ValueError(
            "`next_fn` must return logits with a static vocabulary size (last "
            f"axis). Received logits of shape {tuple(logits.shape)}"
        )
    return int(size)


def write_column(buffer, column, values):
    """Writes `values` `(..., )` into `buffer` `(..., L)` at the dynamic index `column`."""
    length = buffer.shape[-1]
    at_column = ops.equal(ops.arange(length, dtype="int32"), column)  # (L,)
    return ops.where(at_column, ops.expand_dims(values, -1), buffer)


class TokenLoopState(NamedTuple):
    """What the greedy and sampling loops carry from one step to the next."""

    # Scalar int32: the position of the token this step writes, 0 .. max_length - 1.
    step: Any
    # (B,) int32: the token fed to `next_fn` at this step (the start ids at step 0).
    last_ids: Any
    # (B, max_length) int32: the tokens so far, end_id from the current step on.
    tokens: Any
    # (B,) bool: whether the row has produced its end token.
    finished: Any
    # (B,) float32: summed log-probabilities of the tokens of the row so far.
    scores: Any
    # The model state returned by `next_fn`, any nested structure of (B, ...) tensors.
    model_state: Any


def token_loop(next_fn, state, start_ids, end_id, max_length, choose):
    """Runs `next_fn` one token at a time, the next token picked by `choose`.

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state[, alignment])`.
        state: the initial model state, a nested structure of `(B, ...)` tensors.
        start_ids: `(B,)` ids of the first input token.
        end_id: Python int, the end token.
        max_length: Python int, the number of tokens to produce.
        choose: `choose(logits, step) -> (token_ids, log_probs)`, with float32
            logits `(B, V)` and the scalar int32 `step`; returns `(B,)` int32 ids
            and their `(B,)` float32 log-probabilities.

    Returns:
        `(tokens, scores)`: `(B, max_length)` int32 and `(B,)` float32.
    """
    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)
    batch_size = ops.shape(start_ids)[0]
    loop_state = TokenLoopState(
        step=ops.convert_to_tensor(0, dtype="int32"),
        last_ids=start_ids,
        tokens=ops.full((batch_size, max_length), end_id, dtype="int32"),
        finished=ops.zeros((batch_size,), dtype="bool"),
        scores=ops.zeros((batch_size,), dtype="float32"),
        model_state=state,
    )

    def cond(s):
        # Stops at max_length, or as soon as every row has produced its end token.
        return ops.logical_and(
            ops.less(s.step, device_scalar(max_length, "int32")),
            ops.logical_not(ops.all(s.finished)),
        )

    def body(s):
        end = device_scalar(end_id, "int32")
        logits, model_state, _ = call_next_fn(next_fn, s.last_ids, s.model_state)
        token_ids, log_probs = choose(logits, s.step)  # (B,), (B,)
        # A finished row keeps writing end_id and adds nothing to its score.
        token_ids = ops.where(s.finished, end, token_ids)
        log_probs = ops.where(
            s.finished, device_scalar(0.0, log_probs.dtype), log_probs
        )
        return (
            TokenLoopState(
                step=s.step + 1,
                last_ids=token_ids,
                tokens=write_column(s.tokens, s.step, token_ids),
                finished=ops.logical_or(s.finished, ops.equal(token_ids, end)),
                scores=s.scores + log_probs,
                model_state=model_state,
            ),
        )

    (final,) = ops.while_loop(cond, body, (loop_state,))
    return final.tokens, final.scores


def map_state(fn, state):
    """Applies `fn` to every tensor of a nested model state."""
    return keras.tree.map_structure(fn, state)
