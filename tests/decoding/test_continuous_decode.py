"""Tests of continuous_decode against a NumPy loop, its export, and a trained model."""

import doctest

import keras
import numpy as np
import pytest
from decoding_helpers import convert_and_run, jit
from keras import ops

from keras_rnnattn._backend.decoding.loops import STOP_CHECK_EVERY, decoding_loop
from keras_rnnattn.decoding import continuous, continuous_decode
from keras_rnnattn.layers import AttentionDecoder, LocationSensitiveAttention
from tests.backends import on_one_backend


class RecurrenceModel:
    """frame_{t+1} = frame_t A + b, with a stop logit that crosses at a row's step.

    At step t (counted in the state from 0), fed the previous frame x, the next
    frame is `x A + b`, the stop logit `scale * (t + 1 - limit[row])` (a row
    stops after `ceil(limit)` frames at threshold 0.5) and the alignment
    `softmax(x W)` `(S,)`, which depends on the frame fed. The state counts the
    steps per row, sums the frames produced, and counts the loop's iterations in
    a scalar leaf (no batch axis, so never frozen); with `with_mask` it has a
    None leaf, as an unmasked `AttentionDecoder.prepare_memory` gives.
    """

    def __init__(self, limits, frame_size=3, source_length=4, seed=0, scale=2.0):
        rng = np.random.default_rng(seed)
        self.limits = np.asarray(limits, "float32")  # (B,)
        self.a = (0.5 * rng.normal(size=(frame_size, frame_size))).astype("float32")
        self.b = rng.normal(size=(frame_size,)).astype("float32")
        self.w = rng.normal(size=(frame_size, source_length)).astype("float32")
        self.scale = scale
        self.frame_size = frame_size

    def initial_state(self, with_mask=False):
        batch_size = len(self.limits)
        state = {
            "step": ops.zeros((batch_size,), dtype="int32"),
            "total": ops.zeros((batch_size, self.frame_size), dtype="float32"),
            "calls": ops.zeros((), dtype="int32"),
        }
        if with_mask:
            state["mask"] = None
        return state

    def next_fn(self, frame, state):
        outputs = ops.matmul(frame, self.a) + self.b  # (B, D)
        step = ops.cast(state["step"], "float32") + 1.0
        stop_logits = self.scale * (step - self.limits)  # (B,)
        alignment = ops.softmax(ops.matmul(frame, self.w), axis=-1)  # (B, S)
        new_state = dict(state)
        new_state.update(
            step=state["step"] + 1,
            total=state["total"] + outputs,
            calls=state["calls"] + 1,
        )
        return outputs, stop_logits, new_state, alignment

    def numpy_decode(self, start, max_length, threshold=0.5):
        """Frames `(B, L, D)`, lengths, alignments `(B, L, S)`, steps and totals."""
        batch_size = len(self.limits)
        frames = np.zeros((batch_size, max_length, self.frame_size))
        alignments = np.zeros((batch_size, max_length, self.w.shape[1]))
        lengths = np.zeros((batch_size,), "int32")
        totals = np.zeros((batch_size, self.frame_size))
        for row in range(batch_size):
            x = np.asarray(start[row], "float64")
            for t in range(max_length):
                scores = x @ self.w
                alignments[row, t] = np.exp(scores) / np.exp(scores).sum()
                x = x @ self.a + self.b
                frames[row, t] = x
                totals[row] += x
                lengths[row] = t + 1
                logit = self.scale * (t + 1 - self.limits[row])
                if 0.5 * (1.0 + np.tanh(logit / 2.0)) > threshold:  # sigmoid
                    break
        return frames, lengths, alignments, totals


def as_numpy(tree):
    return keras.tree.map_structure(
        lambda x: None if x is None else ops.convert_to_numpy(x), tree
    )


LIMITS = [0.5, 2.2, 3.9, 100.0]  # rows of 1, 3, 4 frames, and one that never stops


def start_frames(batch_size=4, frame_size=3):
    return np.random.default_rng(1).normal(size=(batch_size, frame_size)) * 0.5


@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_numpy_loop_with_alignments_and_frozen_state(with_mask):
    model = RecurrenceModel(LIMITS)
    start = start_frames()
    frames, lengths, alignments, state = as_numpy(
        continuous_decode(
            model.next_fn,
            model.initial_state(with_mask),
            start.astype("float32"),
            max_length=6,
            return_alignments=True,
            return_state=True,
        )
    )
    want_frames, want_lengths, want_alignments, want_totals = model.numpy_decode(
        start, 6
    )
    np.testing.assert_array_equal(want_lengths, [1, 3, 4, 6])
    assert frames.dtype == np.float32 and frames.shape == (4, 6, 3)
    assert lengths.dtype == np.int32
    np.testing.assert_array_equal(lengths, want_lengths)
    np.testing.assert_allclose(frames, want_frames, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(alignments, want_alignments, rtol=1e-5, atol=1e-6)
    for row, length in enumerate(want_lengths):  # exact zeros after the end
        assert np.all(frames[row, length:] == 0.0)
        assert np.all(alignments[row, length:] == 0.0)
        assert np.all(frames[row, :length] != 0.0)
    # Each row's state is the one of its stopping step.
    np.testing.assert_array_equal(state["step"], want_lengths)
    np.testing.assert_allclose(state["total"], want_totals, rtol=1e-5, atol=1e-5)
    assert int(state["calls"]) == 6
    if with_mask:
        assert set(state) == {"step", "total", "calls", "mask"}
        assert state["mask"] is None


def test_outputs_in_documented_order_and_without_options():
    model = RecurrenceModel(LIMITS)
    start = start_frames().astype("float32")
    state = model.initial_state(with_mask=True)
    frames, lengths = as_numpy(continuous_decode(model.next_fn, state, start, 6))
    full = as_numpy(
        continuous_decode(
            model.next_fn,
            state,
            start,
            6,
            return_alignments=True,
            return_state=True,
        )
    )
    only_alignments = as_numpy(
        continuous_decode(model.next_fn, state, start, 6, return_alignments=True)
    )
    only_state = as_numpy(
        continuous_decode(model.next_fn, state, start, 6, return_state=True)
    )
    assert len(only_alignments) == 3 and len(only_state) == 3
    for outputs in (full, only_alignments, only_state):
        np.testing.assert_array_equal(outputs[0], frames)
        np.testing.assert_array_equal(outputs[1], lengths)
    np.testing.assert_array_equal(only_alignments[2], full[2])
    np.testing.assert_array_equal(only_state[2]["step"], full[3]["step"])
    assert only_state[2]["mask"] is None


def test_stops_early_when_every_row_has_stopped():
    # Rows of 1, 3 and 4 frames: the loop runs 4 steps of the 10 allowed,
    # which the unfrozen scalar `calls` counts.
    model = RecurrenceModel(LIMITS[:3])
    start = start_frames(3).astype("float32")
    frames, lengths, state = as_numpy(
        continuous_decode(
            model.next_fn, model.initial_state(), start, 10, return_state=True
        )
    )
    np.testing.assert_array_equal(lengths, [1, 3, 4])
    # On the CPU every backend reads the stop condition before each step.
    assert int(state["calls"]) == 4
    assert frames.shape == (3, 10, 3) and np.all(frames[:, 4:] == 0.0)


@pytest.mark.parametrize("check_every", [None, 1, 3, STOP_CHECK_EVERY])
def test_a_loop_that_reads_its_stop_condition_less_often_gives_the_same_results(
    check_every,
):
    # Rows that stop after 1, 3 and 4 steps, at most 10. Torch reads the
    # condition every `check_every` steps (None: every step on the CPU): the
    # steps after the last row stopped change nothing. JAX and TensorFlow run
    # one while_loop whatever `check_every` is.
    limits = ops.convert_to_tensor(np.array([1, 3, 4], "int32"))
    calls = []

    def cond(steps, total):
        return ops.any(steps < limits)

    def body(steps, total):
        calls.append(1)
        go = steps < limits
        return ops.where(go, steps + 1, steps), ops.where(go, total + steps, total)

    zeros = ops.zeros((3,), "int32")
    steps, total = decoding_loop(cond, body, (zeros, zeros), 10, check_every)
    np.testing.assert_array_equal(ops.convert_to_numpy(steps), [1, 3, 4])
    np.testing.assert_array_equal(ops.convert_to_numpy(total), [0, 3, 6])
    if keras.backend.backend() == "torch":
        every = check_every or 1  # the CPU's
        assert len(calls) == min(10, -(-4 // every) * every)


@pytest.mark.parametrize("threshold", [0.05, 0.9])
def test_threshold_and_stop_logits_of_shape_b_1(threshold):
    model = RecurrenceModel(LIMITS, scale=0.7)  # a soft logit: the threshold matters

    def next_fn(frame, state):
        outputs, stop_logits, state, _ = model.next_fn(frame, state)
        return outputs, stop_logits[:, None], state  # (B, 1), no alignment

    start = start_frames()
    frames, lengths = as_numpy(
        continuous_decode(
            next_fn,
            model.initial_state(),
            start.astype("float32"),
            8,
            stop_threshold=threshold,
        )
    )
    want_frames, want_lengths, _, _ = model.numpy_decode(start, 8, threshold)
    default_lengths = model.numpy_decode(start, 8)[1]
    assert not np.array_equal(want_lengths[:3], default_lengths[:3])
    np.testing.assert_array_equal(lengths, want_lengths)
    np.testing.assert_allclose(frames, want_frames, rtol=1e-5, atol=1e-5)


def test_jit_equals_eager():
    model = RecurrenceModel(LIMITS)
    start = start_frames().astype("float32")

    def run(start_frames, state):
        return continuous_decode(
            model.next_fn,
            state,
            start_frames,
            6,
            return_alignments=True,
            return_state=True,
        )

    eager = as_numpy(run(start, model.initial_state(with_mask=True)))
    compiled = as_numpy(
        jit(run)(ops.convert_to_tensor(start), model.initial_state(with_mask=True))
    )
    assert compiled[3]["mask"] is None
    assert len(keras.tree.flatten(compiled)) == len(keras.tree.flatten(eager))
    for got, want in zip(keras.tree.flatten(compiled), keras.tree.flatten(eager)):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(compiled[1], [1, 3, 4, 6])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_length": 0}, "max_length=0"),
        ({"max_length": 4.0}, "max_length=4.0"),
        ({"stop_threshold": 0.0}, "stop_threshold=0.0"),
        ({"stop_threshold": 1.0}, "stop_threshold=1.0"),
        ({"stop_threshold": 1.5}, "stop_threshold=1.5"),
        ({"stop_threshold": "half"}, "stop_threshold='half'"),
        ({"stop_threshold": True}, "stop_threshold=True"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    model = RecurrenceModel(LIMITS)
    arguments = {"max_length": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        continuous_decode(
            model.next_fn,
            model.initial_state(),
            start_frames().astype("float32"),
            **arguments,
        )


def test_bad_next_fn_outputs_raise():
    model = RecurrenceModel(LIMITS)
    state = model.initial_state()
    start = start_frames().astype("float32")

    def two_outputs(frame, state):
        return model.next_fn(frame, state)[::2]  # (outputs, state)

    with pytest.raises(ValueError, match=r"must return `\(outputs, stop_logits, st"):
        continuous_decode(two_outputs, state, start, 4)

    def without_alignment(frame, state):
        return model.next_fn(frame, state)[:3]

    with pytest.raises(ValueError, match="return_alignments=True"):
        continuous_decode(without_alignment, state, start, 4, return_alignments=True)

    def wrong_frame_size(frame, state):
        outputs, stop_logits, state, _ = model.next_fn(frame, state)
        return outputs[:, :2], stop_logits, state

    with pytest.raises(ValueError, match=r"outputs of shape \(batch_size, 3\)"):
        continuous_decode(wrong_frame_size, state, start, 4)

    def wide_stop_logits(frame, state):
        outputs, stop_logits, state, _ = model.next_fn(frame, state)
        return outputs, ops.stack([stop_logits, stop_logits], axis=1), state

    with pytest.raises(ValueError, match=r"stop logits of shape \(batch_size,\)"):
        continuous_decode(wide_stop_logits, state, start, 4)


def test_docstring_example_runs():
    result = doctest.testmod(continuous, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- Export (TensorFlow) ------------------------------------------------------

on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="SavedModel and TFLite are TensorFlow's formats; JAX and torch models "
    "export through the TensorFlow backend",
)


def exported_decode(start_frames):
    model = RecurrenceModel(LIMITS)
    state = model.initial_state(with_mask=True)
    return continuous_decode(model.next_fn, state, start_frames, 6)


@on_tensorflow
def test_saved_model_gives_eager_results(tmp_path):
    import tensorflow as tf

    start = start_frames().astype("float32")
    module = tf.Module()
    module.decode = tf.function(
        exported_decode,
        input_signature=[tf.TensorSpec((None, 3), tf.float32)],
        autograph=False,
    )
    tf.saved_model.save(module, str(tmp_path / "decode"))
    restored = tf.saved_model.load(str(tmp_path / "decode"))
    frames, lengths = as_numpy(restored.decode(tf.constant(start)))
    eager = as_numpy(exported_decode(start))
    np.testing.assert_array_equal(lengths, [1, 3, 4, 6])
    np.testing.assert_array_equal(lengths, eager[1])
    np.testing.assert_allclose(frames, eager[0], rtol=1e-6, atol=1e-6)


@on_tensorflow
def test_converts_to_tflite_builtin_ops_and_matches():
    start = start_frames().astype("float32")
    outputs, (frames, lengths) = convert_and_run(exported_decode, start)
    # The output order of a TFLite model is not guaranteed: match by dtype.
    by_dtype = {np.asarray(x).dtype.kind: x for x in outputs}
    np.testing.assert_array_equal(by_dtype["i"], lengths)
    np.testing.assert_array_equal(lengths, [1, 3, 4, 6])
    np.testing.assert_allclose(by_dtype["f"], frames, rtol=1e-5, atol=1e-5)


# --- A trained frame predictor ------------------------------------------------

SOURCE_LENGTH, FRAME_SIZE = 6, 2


def copy_task(n, seed):
    """Sources `(n, S, D + S + 2)`: per position a vector x_s `(D,)` (zero
    after the end), its one-hot position, whether it is real, whether it is
    the last real one; the frames to emit are x_0 .. x_{N-1}, N in 2..5 read
    from the source. Teacher-forcing targets run over all S steps: the frames
    (zero after the end) and the stop targets (1 from the last frame on)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, SOURCE_LENGTH, size=n)  # (n,)
    positions = np.arange(SOURCE_LENGTH)
    real = positions[None] < lengths[:, None]  # (n, S)
    x = rng.uniform(-1.0, 1.0, size=(n, SOURCE_LENGTH, FRAME_SIZE)) * real[..., None]
    sources = np.concatenate(
        [
            x,
            np.broadcast_to(np.eye(SOURCE_LENGTH), (n, SOURCE_LENGTH, SOURCE_LENGTH)),
            real[..., None],
            (positions[None] == lengths[:, None] - 1)[..., None],
        ],
        axis=-1,
    ).astype("float32")
    stops = (positions[None] >= lengths[:, None] - 1).astype("float32")  # (n, S)
    return sources, x.astype("float32"), stops, lengths


# The learning itself is the same on every backend (the layers' numbers are
# checked against references on all three): the default suite runs it on one,
# the slow suite on every backend.
@on_one_backend
def test_trained_frame_predictor_stops_and_copies():
    """A Dense encoder, an `AttentionDecoder` with location-sensitive attention
    (Tacotron 2's, whose cumulative alignment rides in the state) and Dense
    frame and stop heads, trained with teacher forcing for 256 steps (about 10 s
    on one CPU), then decoded with `continuous_decode` from a zero "go" frame:
    at least 95% of 200 held-out sources give exactly N frames, and their
    frames are within 0.05 of the targets on average (seeded; seeds 0 to 5 give
    100% and 0.009 to 0.015 on JAX, TensorFlow and torch)."""
    keras.utils.set_random_seed(0)
    units = 32
    sources_in = keras.Input((SOURCE_LENGTH, SOURCE_LENGTH + FRAME_SIZE + 2))
    frames_in = keras.Input((SOURCE_LENGTH, FRAME_SIZE))  # previous frames
    encoder = keras.layers.Dense(units, activation="tanh")
    attention = LocationSensitiveAttention(units, filters=4, kernel_size=3)
    decoder = AttentionDecoder(units, cell="gru", attention=attention)
    frame_head = keras.layers.Dense(FRAME_SIZE)
    stop_head = keras.layers.Dense(1)
    outputs, _ = decoder(frames_in, encoder(sources_in))  # (B, T, units)
    model = keras.Model(
        [sources_in, frames_in], [frame_head(outputs), stop_head(outputs)[..., 0]]
    )
    model.compile(
        keras.optimizers.Adam(0.01, clipnorm=1.0),
        loss=["mse", keras.losses.BinaryCrossentropy(from_logits=True)],
        loss_weights=[10.0, 1.0],
    )
    sources, frames, stops, _ = copy_task(1024, seed=0)
    previous = np.concatenate([np.zeros_like(frames[:, :1]), frames[:, :-1]], 1)
    model.fit([sources, previous], [frames, stops], batch_size=32, epochs=8, verbose=0)

    sources, frames, _, lengths = copy_task(200, seed=1)
    memory = decoder.prepare_memory(encoder(sources))
    state = {"states": decoder.get_initial_state(200, memory=memory), "memory": memory}

    def next_fn(frame, state):
        out, states, alignment = decoder.step(frame, state["states"], state["memory"])
        new_state = {"states": states, "memory": state["memory"]}
        return frame_head(out), stop_head(out), new_state, alignment  # stop (B, 1)

    go = np.zeros((200, FRAME_SIZE), "float32")
    got, got_lengths, alignments = as_numpy(
        continuous_decode(next_fn, state, go, 8, return_alignments=True)
    )
    stopped_right = got_lengths == lengths
    assert stopped_right.mean() >= 0.95, stopped_right.mean()
    rows = np.flatnonzero(stopped_right)
    errors = np.concatenate(
        [np.abs(got[i, :n] - frames[i, :n]) for i, n in zip(rows, lengths[rows])]
    )
    assert errors.mean() < 0.05, errors.mean()
    after_end = np.arange(8)[None] >= got_lengths[:, None]  # (B, L)
    assert np.all(got[after_end] == 0.0) and np.all(alignments[after_end] == 0.0)


@pytest.mark.slow
def test_trained_frame_predictor_stops_and_copies_on_every_backend():
    test_trained_frame_predictor_stops_and_copies()
