"""The G2P card's onnxruntime example runs where Keras, TensorFlow and this package can't."""

import json
import os

import pytest

from tests.backends import on_one_backend
from tests.without_keras import card_block, run_without_keras

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD = os.path.join(REPO, "applications", "misaki_us_g2p", "README.md")
WORDS = ["cat", "cab", "tab", "bat", "act"]
PHONEMES = ["kˈæt", "kˈæb", "tˈæb", "bˈæt", "ˈækt"]


def card_example():
    """The card's onnxruntime block: the python block after its introduction."""
    return card_block(CARD, "Phonemizing with onnxruntime alone")


def run_example(folder, words):
    code = card_example().replace('folder = "misaki_onnx"', f"folder = {folder!r}")
    code = code.replace(
        'print(phonemize("Kokoro"))',
        f"print(json.dumps([phonemize(w) for w in {words!r}]))",
    )
    return run_without_keras(code)


def export_greedy(model, folder, length, max_length):
    from keras_rnnattn.export import export_model

    export_model(
        model,
        folder,
        "onnx",
        batch_size=1,
        sequence_length=length,
        max_length=max_length,
        signatures=["greedy"],
    )


@on_one_backend
def test_the_example_phonemizes_as_keras_without_keras(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    keras = pytest.importorskip("keras")
    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    keras.utils.set_random_seed(0)
    model = Translator(
        CharTokenizer(fold_letters=True).fit(WORDS),
        CharTokenizer().fit(PHONEMES),
        embedding_dim=16,
        units=32,
    )
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    model.fit(*model.encode_pairs(WORDS, PHONEMES), epochs=150, batch_size=5, verbose=0)
    export_greedy(model, str(tmp_path), length=56, max_length=64)
    assert run_example(str(tmp_path), WORDS) == model.translate(WORDS) == PHONEMES
    # Letters with marks are read as their base letters, from the exported
    # tokenizer's folding table, as the model reads them.
    marked = ["cát", "çab", "tàb"]
    expected = model.translate(["cat", "cab", "tab"])
    assert run_example(str(tmp_path), marked) == model.translate(marked) == expected


@pytest.mark.slow  # exports the shipped preset (a minute); the test above runs the same code
def test_the_example_phonemizes_as_the_preset(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    from keras_rnnattn.models import Translator

    folder = os.path.join(REPO, "saved_models", "misaki_us_g2p")
    if not os.path.isdir(folder):
        pytest.skip("misaki_us_g2p is not shipped")
    model = Translator.from_preset(folder)
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as f:
        words = json.load(f)["test_slice_words"]
    export_greedy(model, str(tmp_path), length=56, max_length=64)
    assert run_example(str(tmp_path), words) == model.translate(words, max_length=64)
