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


def require_alignment(alignment):
    """Raises if `next_fn` returned no alignment although the caller asked for one."""
    if alignment is None:
        raise ValueError(
            "`return_alignments=True` needs the attention weights: `next_fn` must "
            "return `(logits, state, alignment)` (an `AttentionDecoder` step gives "
            "them), or pass `return_alignments=False`. Received a `next_fn` "
            "returning `(logits, state)`"
        )


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


def write_at(buffer, axis, index, values):
    """Writes `values` into `buffer` at the dynamic `index` of its (static) `axis`.

    `values` has the shape of `buffer` without `axis`. A `where` over the whole
    buffer, like `write_column`: the same op on every backend and in TFLite.
    """
    length = buffer.shape[axis]
    shape = [1] * len(buffer.shape)
    shape[axis] = length
    at_index = ops.reshape(ops.equal(ops.arange(length, dtype="int32"), index), shape)
    return ops.where(at_index, ops.expand_dims(values, axis), buffer)


def where_rows(rows, x, y):
    """`x` where `rows` `(B, ...)` is True, else `y`; `rows` broadcast over the
    trailing axes of `x` and `y` (whose leading axes are those of `rows`)."""
    extra = len(x.shape) - len(rows.shape)
    shape = (-1,) + tuple(rows.shape[1:]) + (1,) * extra  # rows' trailing axes static
    return ops.where(ops.reshape(rows, shape), x, y)


def zero_history(alignment, leading):
    """Zeros `leading + alignment.shape[1:]`: the history of a `(B, ...)` alignment."""
    rest = tuple(ops.shape(alignment)[1:])  # dynamic where unknown when traced
    dtype = keras.backend.standardize_dtype(alignment.dtype)
    return ops.zeros(tuple(leading) + rest, dtype=dtype)


class FlatState:
    """A nested model state as the flat list of its tensors, which a loop carries.

    `None` leaves (an absent mask, say) are no tensors: the list leaves them
    out and `pack` puts them back, so a loop and a gather never see them.
    """

    def __init__(self, state):
        self.template = state
        self.is_none = [leaf is None for leaf in keras.tree.flatten(state)]

    def tensors(self, state):
        """The tensors of `state`, a structure like the template's."""
        leaves = keras.tree.flatten(state)
        if [leaf is None for leaf in leaves] != self.is_none:
            raise ValueError(
                "`next_fn` must return a state with the structure of the one it "
                "received, None leaves where it had None. Received: a state with "
                f"{len(leaves)} leaves ({sum(x is None for x in leaves)} None) for "
                f"one of {len(self.is_none)} leaves ({sum(self.is_none)} None)"
            )
        return [leaf for leaf in leaves if leaf is not None]

    def pack(self, tensors):
        """The template's structure with its tensors replaced by `tensors`."""
        tensors = iter(tensors)
        leaves = [None if none else next(tensors) for none in self.is_none]
        return keras.tree.pack_sequence_as(self.template, leaves)


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
    # The tensors of the model state returned by `next_fn` (a `FlatState` list).
    model_state: Any
    # The alignment history, like `next_fn`'s alignment with (B, max_length, ...)
    # leaves, zero after each row's end; () unless alignments are returned.
    alignments: Any


def token_loop(
    next_fn,
    state,
    start_ids,
    end_id,
    max_length,
    choose,
    return_alignments=False,
    return_state=False,
):
    """Runs `next_fn` one token at a time, the next token picked by `choose`.

    Args:
        next_fn: `next_fn(token_ids, state) -> (logits, state[, alignment])`.
        state: the initial model state, a nested structure of `(B, ...)` tensors
            (None leaves allowed).
        start_ids: `(B,)` ids of the first input token.
        end_id: Python int, the end token.
        max_length: Python int, the number of tokens to produce.
        choose: `choose(logits, step) -> (token_ids, log_probs)`, with float32
            logits `(B, V)` and the scalar int32 `step`; returns `(B,)` int32 ids
            and their `(B,)` float32 log-probabilities.
        return_alignments: bool, also return the alignment history.
        return_state: bool, also return the final state, each row's frozen at
            the step that produced its end token.

    Returns:
        `(tokens, scores)`: `(B, max_length)` int32 and `(B,)` float32, then the
        alignments and the state where asked for (see `greedy_search`).
    """
    start_ids = ops.cast(ops.convert_to_tensor(start_ids), "int32")  # (B,)
    batch_size = ops.shape(start_ids)[0]
    flat_state = FlatState(state)
    alignments = ()
    if return_alignments:
        # One call only to learn the alignment's structure and shapes; under
        # jit its unused results are compiled away.
        _, _, alignment = call_next_fn(next_fn, start_ids, state)
        require_alignment(alignment)
        alignments = keras.tree.map_structure(
            lambda a: zero_history(a, (batch_size, max_length)), alignment
        )  # (B, L, S) leaves
    loop_state = TokenLoopState(
        step=ops.convert_to_tensor(0, dtype="int32"),
        last_ids=start_ids,
        tokens=ops.full((batch_size, max_length), end_id, dtype="int32"),
        finished=ops.zeros((batch_size,), dtype="bool"),
        scores=ops.zeros((batch_size,), dtype="float32"),
        model_state=flat_state.tensors(state),
        alignments=alignments,
    )

    def cond(s):
        # Stops at max_length, or as soon as every row has produced its end token.
        return ops.logical_and(
            ops.less(s.step, device_scalar(max_length, "int32")),
            ops.logical_not(ops.all(s.finished)),
        )

    def body(s):
        end = device_scalar(end_id, "int32")
        logits, model_state, alignment = call_next_fn(
            next_fn, s.last_ids, flat_state.pack(s.model_state)
        )
        model_state = flat_state.tensors(model_state)
        token_ids, log_probs = choose(logits, s.step)  # (B,), (B,)
        # A finished row keeps writing end_id and adds nothing to its score.
        token_ids = ops.where(s.finished, end, token_ids)
        log_probs = ops.where(
            s.finished, device_scalar(0.0, log_probs.dtype), log_probs
        )
        if return_state:
            # A finished row keeps the state of the step that produced its end
            # token (leaves without a batch axis follow the last step).
            model_state = [
                where_rows(s.finished, old, new) if len(new.shape) else new
                for old, new in zip(s.model_state, model_state)
            ]
        alignments = s.alignments
        if return_alignments:
            # The step's alignment at its token's position; 0 once finished.
            alignments = keras.tree.map_structure(
                lambda history, a: write_at(
                    history,
                    1,
                    s.step,
                    where_rows(s.finished, ops.zeros_like(a), a),
                ),
                s.alignments,
                alignment,
            )
        return (
            TokenLoopState(
                step=s.step + 1,
                last_ids=token_ids,
                tokens=write_column(s.tokens, s.step, token_ids),
                finished=ops.logical_or(s.finished, ops.equal(token_ids, end)),
                scores=s.scores + log_probs,
                model_state=model_state,
                alignments=alignments,
            ),
        )

    (final,) = ops.while_loop(cond, body, (loop_state,))
    outputs = (final.tokens, final.scores)
    if return_alignments:
        outputs += (final.alignments,)
    if return_state:
        outputs += (flat_state.pack(final.model_state),)
    return outputs


def map_state(fn, state):
    """Applies `fn` to every tensor of a nested model state; None stays None."""
    return keras.tree.map_structure(lambda x: None if x is None else fn(x), state)
