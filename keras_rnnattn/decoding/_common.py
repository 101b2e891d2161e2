"""Argument checks, the `next_fn` call and the step-by-step loop shared by the decoders."""

from typing import Any, NamedTuple

import keras
import numpy as np
from keras import ops

from keras_rnnattn._backend import decoding_loop, device_scalar
from keras_rnnattn._checks import positive_int


def read_when_run(value):
    """Whether `value` is a tensor or an array (read when a compiled search
    runs), not a Python number (a constant of the trace)."""
    return ops.is_tensor(value) or isinstance(value, np.ndarray)


def check_int(name, value, minimum=1):
    """Returns `value` as a Python int, or raises if it is not an int >= `minimum`."""
    why = " (a Python int: it fixes a static shape or loop bound)"
    return positive_int(name, value, minimum, why=why)


def check_end_id(end_id):
    """Returns `end_id` as a Python int, or raises if it is not a non-negative int."""
    return positive_int("end_id", end_id, 0, why=" (the id of the end token)")


def split_outputs(outputs, names):
    """`next_fn`'s `outputs` as `(values, state, alignment)`, or raises.

    `names` are the parts `next_fn` must return, the state last, for example
    `("logits", "state")`; an alignment may follow them. `values` is the tuple
    of the parts before the state, `alignment` None when there is none.
    """
    size = len(names)
    if not isinstance(outputs, (tuple, list)) or len(outputs) not in (size, size + 1):
        described = f"of type {type(outputs).__name__}"
        if isinstance(outputs, (tuple, list)):
            described += f" and length {len(outputs)}"
        raise ValueError(
            f"`next_fn` must return `({', '.join(names)})` or "
            f"`({', '.join(names)}, alignment)`. Received an output {described}"
        )
    alignment = outputs[size] if len(outputs) > size else None
    return tuple(outputs[: size - 1]), outputs[size - 1], alignment


def call_next_fn(next_fn, token_ids, state):
    """Calls `next_fn(token_ids, state)` and returns `(logits, state, alignment)`.

    `alignment` is None when `next_fn` returns only `(logits, state)`. The logits
    are cast to float32 so that every score is computed in float32.
    """
    (logits,), new_state, alignment = split_outputs(
        next_fn(token_ids, state), ("logits", "state")
    )
    return ops.cast(logits, "float32"), new_state, alignment


def require_alignment(alignment, names=("logits", "state")):
    """Raises if `next_fn` returned no alignment although the caller asked for one.

    `names` are the parts `next_fn` returns before the alignment.
    """
    if alignment is None:
        parts = ", ".join(names)
        raise ValueError(
            "`return_alignments=True` needs the attention weights: `next_fn` must "
            f"return `({parts}, alignment)` (an `AttentionDecoder` step gives "
            "them), or pass `return_alignments=False`. Received a `next_fn` "
            f"returning `({parts})`"
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
        # The structure alone: a compiled torch step would otherwise be
        # guarded on the first state's tensors and compiled twice.
        self.template = keras.tree.map_structure(
            lambda leaf: None if leaf is None else 0, state
        )
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


class LoopState(NamedTuple):
    """What a decoding loop carries from one step to the next."""

    # Scalar int32: the position this step writes, 0 .. max_length - 1.
    step: Any
    # (B, ...): what `next_fn` is fed at this step (the start inputs at step 0).
    inputs: Any
    # The decoder's own buffers, such as the tokens and scores so far.
    outputs: Any
    # (B,) bool: whether the row has ended (at an earlier step).
    finished: Any
    # The tensors of the model state returned by `next_fn` (a `FlatState` list).
    model_state: Any
    # The alignment history, like `next_fn`'s alignment with (B, max_length, ...)
    # leaves, zero after each row's end; () unless alignments are returned.
    alignments: Any


def decode_loop(
    call,
    state,
    start_inputs,
    outputs,
    advance,
    max_length,
    return_alignments=False,
    return_state=False,
    signature=("logits", "state"),
):
    """Runs `call` one step at a time in one loop (`_backend.decoding_loop`: a
    `keras.ops.while_loop`, or on torch a loop that reads nothing back from
    the device between its stop checks).

    The loop stops after `max_length` steps or once every row has ended (on
    torch at the next stop check: a step for rows that have ended changes
    nothing). It
    carries the model state (frozen at each row's last step with
    `return_state`) and the alignment history (with `return_alignments`); the
    decoder says what a step emits and when a row ends through `advance`.

    Args:
        call: `call(inputs, state) -> (prediction, state, alignment)`, the
            decoder's call of its `next_fn` (alignment None if it has none).
        state: the initial model state, a nested structure of `(B, ...)` tensors
            (None leaves allowed).
        start_inputs: `(B, ...)` tensor, what `call` is fed at the first step.
        outputs: the decoder's initial buffers (any structure of tensors).
        advance: `advance(prediction, step, finished, outputs) -> (inputs,
            outputs, finished)`: the next step's inputs, the buffers with this
            step written (nothing for rows already `finished`, `(B,)` bool),
            and `(B,)` bool, whether the row has ended by this step.
        max_length: Python int, the most steps.
        return_alignments: bool, also return the alignment history.
        return_state: bool, also return the final state, each row's frozen at
            the step where it ended.
        signature: the names of `next_fn`'s outputs before the alignment, for
            the error raised when an alignment is asked for but missing.

    Returns:
        `outputs` after the last step, then the alignments `(B, max_length, ...)`
        and the state where asked for.
    """
    batch_size = ops.shape(start_inputs)[0]
    flat_state = FlatState(state)
    alignments = ()
    if return_alignments:
        # One call only to learn the alignment's structure and shapes; under
        # jit its unused results are compiled away.
        _, _, alignment = call(start_inputs, state)
        require_alignment(alignment, signature)
        alignments = keras.tree.map_structure(
            lambda a: zero_history(a, (batch_size, max_length)), alignment
        )  # (B, L, S) leaves
    loop_state = LoopState(
        step=ops.convert_to_tensor(0, dtype="int32"),
        inputs=start_inputs,
        outputs=outputs,
        finished=ops.zeros((batch_size,), dtype="bool"),
        model_state=flat_state.tensors(state),
        alignments=alignments,
    )

    def cond(s):
        # Stops at max_length, or as soon as every row has ended.
        return ops.logical_and(
            ops.less(s.step, device_scalar(max_length, "int32")),
            ops.logical_not(ops.all(s.finished)),
        )

    def body(s):
        prediction, model_state, alignment = call(
            s.inputs, flat_state.pack(s.model_state)
        )
        model_state = flat_state.tensors(model_state)
        inputs, outputs, finished = advance(prediction, s.step, s.finished, s.outputs)
        if return_state:
            # A finished row keeps the state of the step where it ended (leaves
            # without a batch axis follow the last step).
            model_state = [
                where_rows(s.finished, old, new) if len(new.shape) else new
                for old, new in zip(s.model_state, model_state)
            ]
        alignments = s.alignments
        if return_alignments:
            # The step's alignment at its position; 0 once finished.
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
            LoopState(
                step=s.step + 1,
                inputs=inputs,
                outputs=outputs,
                finished=finished,
                model_state=model_state,
                alignments=alignments,
            ),
        )

    (final,) = decoding_loop(cond, body, (loop_state,), max_length)
    results = (final.outputs,)
    if return_alignments:
        results += (final.alignments,)
    if return_state:
        results += (flat_state.pack(final.model_state),)
    return results


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

    def call(token_ids, state):
        return call_next_fn(next_fn, token_ids, state)

    def advance(logits, step, finished, outputs):
        tokens, scores = outputs  # (B, L), (B,)
        end = device_scalar(end_id, "int32")
        token_ids, log_probs = choose(logits, step)  # (B,), (B,)
        # A finished row keeps writing end_id and adds nothing to its score.
        token_ids = ops.where(finished, end, token_ids)
        log_probs = ops.where(finished, device_scalar(0.0, log_probs.dtype), log_probs)
        return (
            token_ids,
            (write_column(tokens, step, token_ids), scores + log_probs),
            ops.logical_or(finished, ops.equal(token_ids, end)),
        )

    outputs = (
        ops.full((batch_size, max_length), end_id, dtype="int32"),  # tokens
        ops.zeros((batch_size,), dtype="float32"),  # scores
    )
    (tokens, scores), *rest = decode_loop(
        call,
        state,
        start_ids,
        outputs,
        advance,
        max_length,
        return_alignments=return_alignments,
        return_state=return_state,
    )
    return (tokens, scores, *rest)


def map_state(fn, state):
    """Applies `fn` to every tensor of a nested model state; None stays None."""
    return keras.tree.map_structure(lambda x: None if x is None else fn(x), state)
