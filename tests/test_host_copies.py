"""No host-to-device copies inside the training step or the decoding loops.

A Python number or NumPy array given to a `keras.ops` function is converted to a
tensor first; under torch on a GPU that copy waits for every queued kernel, so
one inside a decoder step stalls the device at every step (the GPU check found
40 such waits per train step of the input-feeding Translator). Counted here on
the CPU through the torch backend's `convert_to_tensor`, the one door every
such conversion goes through; the other backends compile these functions.
"""

import importlib
import traceback

import keras
import numpy as np
import pytest

from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="counts the torch backend's host-to-device conversions",
)
TORCH_MODULES = ("core", "numpy", "nn", "math", "linalg", "trainer")


@pytest.fixture
def host_copies(monkeypatch):
    """A list that collects `(file:line)` of each conversion of a non-tensor made
    from keras_rnnattn's code while `host_copies.active` is set."""
    import torch

    core = importlib.import_module("keras.src.backend.torch.core")
    original = core.convert_to_tensor
    seen = []

    def counting(x, *args, **kwargs):
        if (
            seen_active[0]
            and not isinstance(x, torch.Tensor)
            and not hasattr(x, "value")
        ):
            frames = [
                f"{frame.filename.rsplit('keras_rnnattn/', 1)[-1]}:{frame.lineno}"
                for frame in traceback.extract_stack()[:-1]
                if "/keras_rnnattn/" in frame.filename
            ]
            if frames:
                seen.append(frames[-1])
        return original(x, *args, **kwargs)

    seen_active = [False]
    patched = 0
    for name in TORCH_MODULES:
        module = importlib.import_module(f"keras.src.backend.torch.{name}")
        if getattr(module, "convert_to_tensor", None) is original:
            monkeypatch.setattr(module, "convert_to_tensor", counting)
            patched += 1
    assert patched >= 4, "Keras moved convert_to_tensor: update TORCH_MODULES"

    class Recorder:
        def __enter__(self):
            seen.clear()
            seen_active[0] = True
            return seen

        def __exit__(self, *exc):
            seen_active[0] = False

    return Recorder()


def small_translator(**kwargs):
    pairs = [("a small cat", "eine Katze"), ("the red house", "das rote Haus")]
    source = CharTokenizer().fit([s for s, _ in pairs])
    target = CharTokenizer().fit([t for _, t in pairs])
    model = Translator(source, target, embedding_dim=8, units=8, **kwargs)
    model.compile()
    return model, model.encode_pairs([s for s, _ in pairs], [t for _, t in pairs])


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),  # GRU, Bahdanau attention, input feeding: the step loop
        dict(
            cell="lstm", attention="luong_dot", input_feeding=False, bidirectional=False
        ),
    ],
    ids=["feeding", "fast"],
)
def test_train_step_makes_no_host_copies(host_copies, kwargs):
    model, (x, y) = small_translator(**kwargs)
    # The batch itself is copied once whatever the model does: give it as tensors.
    x, y = keras.tree.map_structure(keras.ops.convert_to_tensor, (x, y))
    model.train_on_batch(x, y)  # builds the optimizer and metrics
    with host_copies as seen:
        model.train_on_batch(x, y)
    assert seen == []


@pytest.mark.parametrize("beam_size", [1, 4])
def test_decoding_steps_make_no_host_copies(host_copies, beam_size):
    # What a whole search converts does not grow with the number of steps: the
    # set-up may convert a few numbers once, no step converts any.
    model, _ = small_translator(lexical_model=True)
    source = np.asarray(model.encode_source(["a small cat"]))
    counts = []
    for max_length in (2, 8):
        kwargs = dict(length_penalty=0.6) if beam_size > 1 else {}
        model.generate_ids(source, beam_size, max_length, **kwargs)  # warm-up
        with host_copies as seen:
            model.generate_ids(source, beam_size, max_length, **kwargs)
        counts.append(list(seen))
    assert len(counts[0]) == len(counts[1]), counts


def test_continuous_decode_steps_make_no_host_copies(host_copies):
    from keras_rnnattn.decoding import continuous_decode

    ops = keras.ops
    weights = ops.convert_to_tensor(np.eye(3, dtype="float32") * 0.5)
    limits = ops.convert_to_tensor(np.array([2.5, 10.0], "float32"))

    def next_fn(frame, state):
        frame = ops.matmul(frame, weights) + 1.0  # (B, 3); a scalar op, no copy
        step = state + 1  # (B,)
        stop_logits = ops.cast(step, "float32") - limits
        return frame, stop_logits, step, ops.softmax(frame, axis=-1)

    state = ops.zeros((2,), "int32")
    start = ops.zeros((2, 3), "float32")
    counts = []
    for max_length in (2, 8):
        flags = dict(return_alignments=True, return_state=True)
        continuous_decode(next_fn, state, start, max_length, **flags)  # warm-up
        with host_copies as seen:
            continuous_decode(next_fn, state, start, max_length, **flags)
        counts.append(list(seen))
    assert len(counts[0]) == len(counts[1]), counts
