"""Decoding continuous outputs: frames fed back until a stop logit fires."""

import math
import numbers

from keras import ops

from keras_rnnattn._backend import device_scalar
from keras_rnnattn.decoding._common import (
    check_int,
    decode_loop,
    split_outputs,
    where_rows,
    write_at,
)

SIGNATURE = ("outputs", "stop_logits", "state")


def continuous_decode(
    next_fn,
    state,
    start_inputs,
    max_length,
    stop_threshold=0.5,
    return_alignments=False,
    return_state=False,
):
    """Decodes a sequence of frames, each fed back as the next input.

    The Keras 3 successor of tfa's `InferenceSampler`, for models whose output
    is continuous (spectrogram frames, regression targets) rather than a token.
    At every step `next_fn` gives the next frame and a stop logit; a row stops
    after the first step whose `sigmoid(stop_logits) > stop_threshold` (that
    frame is included, as in Tacotron 2), or after `max_length` frames. The
    comparison is made on the logit, `stop_logits > log(p / (1 - p))` for
    `p = stop_threshold`, which is the same test without a saturating sigmoid.

    The loop is one `keras.ops.while_loop` with static shapes, as in
    `greedy_search`: it runs eagerly and under `jax.jit` /
    `tf.function(jit_compile=True)`, exports to SavedModel and converts to
    TFLite builtin ops. It stops as soon as every row has stopped.

    Args:
        next_fn: `next_fn(inputs, state) -> (outputs, stop_logits, state)` or
            `(outputs, stop_logits, state, alignment)`: `inputs` `(B, D)` the
            previous frame, `outputs` `(B, D)` the next frame (fed back at the
            next step), `stop_logits` `(B,)` or `(B, 1)`, `alignment` `(B, S)`
            attention weights of this step (or a list of them, one per
            attention mechanism); the returned state must keep the structure,
            shapes and dtypes of the one it received. The alignment is used
            only with `return_alignments=True`.
        state: the initial model state, any nested structure (dict, list, tuple)
            of tensors with leading dimension B (`()` for none); None leaves
            (an absent mask) are passed through as None.
        start_inputs: `(B, D)` float, the input of the first step (a "go" frame,
            often zeros).
        max_length: Python int >= 1, the most frames produced.
        stop_threshold: float in (0, 1), the stop probability above which a
            row stops.
        return_alignments: bool; also return the alignment of every frame.
            Needs `next_fn` to return the alignment; `next_fn` is then called
            once more before the loop, to learn its shape (jit compiles that
            call away).
        return_state: bool; also return the final model state.

    Returns:
        `(frames, lengths)`: `frames` `(B, max_length, D)` float32, without the
        start inputs, exactly 0 after each row's last frame; `lengths` `(B,)`
        int32, the number of frames of each row, the stopping frame included
        (`max_length` for a row that never stops). With `return_alignments`
        and/or `return_state`, `(frames, lengths, alignments)`, `(frames,
        lengths, state)` or `(frames, lengths, alignments, state)`:
        `alignments` `(B, max_length, S)` (the structure of `next_fn`'s
        alignment, each leaf with the `max_length` axis), position t the
        alignment of the step that produced frame t, exactly 0 after the row's
        last frame; `state` the state `next_fn` returned at the row's stopping
        step (after the last step for a row that never stops), None leaves None.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_rnnattn.decoding import continuous_decode
    >>> # Each frame is the previous one plus 1; a row stops once its frame
    >>> # passes its limit (the state): stop logit = frame - limit.
    >>> def next_fn(frame, limit):
    ...     frame = frame + 1.0
    ...     return frame, frame[:, 0] - limit, limit
    >>> limits = ops.convert_to_tensor([1.5, 3.5])
    >>> frames, lengths = continuous_decode(
    ...     next_fn, limits, start_inputs=np.zeros((2, 2), "float32"), max_length=5
    ... )
    >>> ops.convert_to_numpy(lengths).tolist()
    [2, 4]
    >>> ops.convert_to_numpy(frames)[:, :, 0].tolist()  # zeros after the end
    [[1.0, 2.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0, 0.0]]
    >>> # With an attention over 3 source positions that follows the step:
    >>> def attending_fn(frame, limit):
    ...     frame, stop_logits, limit = next_fn(frame, limit)
    ...     step = ops.cast(frame[:, 0], "int32") - 1
    ...     return frame, stop_logits, limit, ops.one_hot(ops.minimum(step, 2), 3)
    >>> frames, lengths, alignments = continuous_decode(
    ...     attending_fn, limits, np.zeros((2, 2), "float32"), max_length=5,
    ...     return_alignments=True,
    ... )
    >>> ops.convert_to_numpy(alignments)[0].tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    max_length = check_int("max_length", max_length)
    stop_logit = _stop_logit(stop_threshold)
    start_inputs = ops.cast(ops.convert_to_tensor(start_inputs), "float32")
    if len(start_inputs.shape) != 2 or start_inputs.shape[-1] is None:
        raise ValueError(
            "`start_inputs` must be a `(batch_size, frame_size)` tensor with a "
            "static frame size (a zero frame for a 'go' input). Received: "
            f"start_inputs of shape {tuple(start_inputs.shape)}"
        )
    batch_size, frame_size = ops.shape(start_inputs)[0], start_inputs.shape[-1]

    def call(frame, state):
        (outputs, stop_logits), new_state, alignment = split_outputs(
            next_fn(frame, state), SIGNATURE
        )
        outputs = ops.cast(outputs, "float32")  # (B, D)
        if tuple(outputs.shape[1:]) != (frame_size,):
            raise ValueError(
                f"`next_fn` must return outputs of shape (batch_size, {frame_size}), "
                "the shape of `start_inputs`: each frame is fed back as the next "
                f"input. Received: outputs of shape {tuple(outputs.shape)}"
            )
        stop_logits = ops.cast(stop_logits, "float32")
        if len(stop_logits.shape) == 2 and stop_logits.shape[1] == 1:
            stop_logits = stop_logits[:, 0]
        if len(stop_logits.shape) != 1:
            raise ValueError(
                "`next_fn` must return stop logits of shape (batch_size,) or "
                f"(batch_size, 1). Received: stop_logits of shape "
                f"{tuple(stop_logits.shape)}"
            )
        return (outputs, stop_logits), new_state, alignment

    def advance(prediction, step, finished, outputs):
        frame, stop_logits = prediction  # (B, D), (B,)
        frames, lengths = outputs  # (B, L, D), (B,)
        # A finished row writes zeros and counts no more frames.
        written = where_rows(finished, ops.zeros_like(frame), frame)
        lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        stops = ops.greater(stop_logits, device_scalar(stop_logit, "float32"))
        return (
            frame,
            (write_at(frames, 1, step, written), lengths),
            ops.logical_or(finished, stops),
        )

    outputs = (
        ops.zeros((batch_size, max_length, frame_size), dtype="float32"),  # frames
        ops.zeros((batch_size,), dtype="int32"),  # lengths
    )
    (frames, lengths), *rest = decode_loop(
        call,
        state,
        start_inputs,
        outputs,
        advance,
        max_length,
        return_alignments=bool(return_alignments),
        return_state=bool(return_state),
        signature=SIGNATURE,
    )
    return (frames, lengths, *rest)


def _stop_logit(stop_threshold):
    """The logit of `stop_threshold`, a float in (0, 1), or raises."""
    if isinstance(stop_threshold, bool) or not isinstance(stop_threshold, numbers.Real):
        raise ValueError(
            "`stop_threshold` must be a Python float in (0, 1), the stop "
            f"probability above which a row stops. Received: "
            f"stop_threshold={stop_threshold!r}"
        )
    if not 0.0 < stop_threshold < 1.0:
        raise ValueError(
            "`stop_threshold` must be in (0, 1) (0.5 stops where the stop logit "
            f"is positive). Received: stop_threshold={stop_threshold}"
        )
    return math.log(stop_threshold) - math.log1p(-stop_threshold)
