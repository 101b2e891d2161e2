"""`.keras` files saved by the previous version load with the same outputs.

The files (`tests/fixtures/saved_v0/`) were saved before the decoder was composed
of owned objects and the package's top level moved into folders: a `Translator`,
and a functional model around an `AttentionDecoder` with two mechanisms (one
stateful) and their attention layers. Keras finds their weights by layer path,
so these tests fail if a composed class renamed or re-nested a layer.
"""

import os

import keras
import numpy as np

import keras_rnnattn  # noqa: F401 (registers the classes the files name)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "saved_v0")
WORDS = ["abc", "abd", "bcd", "dca", "cab", "bad"]


def expected():
    return np.load(os.path.join(FIXTURES, "saved_v0_outputs.npz"))


def test_a_previous_translator_loads_and_translates_alike():
    model = keras.saving.load_model(os.path.join(FIXTURES, "translator_v0.keras"))
    assert type(model).__name__ == "Translator"
    assert model.translate(WORDS) == [str(t) for t in expected()["translations"]]


def test_a_previous_decoder_with_two_mechanisms_loads_with_its_outputs():
    model = keras.saving.load_model(os.path.join(FIXTURES, "decoder_v0.keras"))
    decoder = model.get_layer("decoder")
    assert [type(m).__name__ for m in decoder.mechanisms] == [
        "LuongAttention",
        "BahdanauMonotonicAttention",
    ]
    want = expected()
    got = model.predict([want["x"], want["m"]], verbose=0)
    for output, name in zip(got, ("out0", "out1", "out2")):
        np.testing.assert_allclose(output, want[name], rtol=1e-5, atol=1e-5)
