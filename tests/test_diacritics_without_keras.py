"""The diacritics tagger exported to ONNX and LiteRT gives Keras's outputs,
and the card's onnxruntime block restores text as `restore_diacritics` does,
in a process where Keras, TensorFlow, JAX, torch and this package can't be
imported."""

import os

import numpy as np
import pytest

from tests.backends import on_one_backend
from tests.without_keras import card_block, run_without_keras

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD = os.path.join(REPO, "applications", "diacritics_cs", "README.md")
LONG = "zitra rano pojedu do brna kde je namesti a kasna se sochou " * 5


def card_example():
    """The card's onnxruntime block: the python block after its introduction."""
    return card_block(CARD, "Restoring with onnxruntime alone")


@pytest.fixture(scope="module")
def tagger():
    from tests.models.test_diacritics_restoration import train_tagger

    return train_tagger()


@on_one_backend
@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_exported_files_give_the_keras_probabilities(tagger, fmt, tmp_path):
    pytest.importorskip("onnxruntime" if fmt == "onnx" else "ai_edge_litert")
    from keras_rnnattn.export import export_model
    from keras_rnnattn.text.diacritics import char_ids, model_text

    folder = tmp_path / fmt
    export_model(tagger, str(folder), fmt, batch_size=1, sequence_length=64)
    ids = np.zeros((1, 64), "int32")
    row = char_ids(tagger.tokenizer, model_text("Dekuji za zpravu, ozvu se vecer"))
    ids[0, : len(row)] = row
    expected = tagger.predict(ids, verbose=0)  # (1, 64, tags)
    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(folder / "serving_default.onnx"))
        got = session.run(None, {"token_ids": ids})[0]
    else:
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=str(folder / "serving_default.tflite"))
        interpreter.allocate_tensors()
        got = interpreter.get_signature_runner()(token_ids=ids)["probabilities"]
    real = slice(0, len(row))
    np.testing.assert_allclose(got[0, real], expected[0, real], atol=1e-5)
    assert (got[0, real].argmax(-1) == expected[0, real].argmax(-1)).all()


@on_one_backend
def test_the_card_block_restores_as_keras_without_keras(tagger, tmp_path):
    pytest.importorskip("onnxruntime")
    from keras_rnnattn.export import export_model

    folder = str(tmp_path / "diacritics_onnx")
    export_model(tagger, folder, "onnx", batch_size=1, sequence_length=64)
    texts = ["Zitra rano pojedu do Brna", "DEKUJI za zpravu!", "Zitra ráno", LONG]
    code = (
        card_example()
        .replace('folder = "diacritics_onnx"', f"folder = {folder!r}")
        .replace(
            'print(restore("Zitra rano pojedu do Brna"))',
            f"import json\nprint(json.dumps([restore(t) for t in {texts!r}]))",
        )
    )
    restored = run_without_keras(code)
    assert restored == tagger.restore_diacritics(texts)
    assert restored[0] == "Zítra ráno pojedu do Brna"  # learned, not a copy
