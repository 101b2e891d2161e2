"""Every application model with a SentencePieceTokenizer: saving, presets, export."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

spm = pytest.importorskip("sentencepiece")

from keras_rnnattn import export  # noqa: E402
from keras_rnnattn.export.writers import write_tokenizers  # noqa: E402
from keras_rnnattn.models import (  # noqa: E402
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
    Translator,
)
from keras_rnnattn.text import SentencePieceTokenizer  # noqa: E402
from tests.task_test_utils import run_task_test  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = ["ich habe zeit", "du hast zeit", "wir haben keine zeit", "ich bin da"] * 3
TARGET = ["i have time", "you have time", "we have no time", "i am here"] * 3
LABELS = ["yes", "yes", "no", "yes"] * 3
CHECKS = ["keras_file", "preset"]


def sp(texts, model_type="bpe"):
    return SentencePieceTokenizer(vocabulary_size=40, model_type=model_type).fit(texts)


@pytest.fixture(scope="module")
def classifier():
    keras.utils.set_random_seed(1)
    model = AttentionClassifier(
        tokenizer=sp(SOURCE, "unigram"),
        labels=["no", "yes"],
        embedding_dim=8,
        units=8,
    )
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    model.fit(SOURCE, LABELS, epochs=2, verbose=0)
    return model


def piece_tags(tokenizer, texts):
    """One tag per piece: "W" for a piece that starts a word, else "I"."""
    return [
        ["W" if piece.startswith("▁") else "I" for piece in tokenizer.tokenize(t)]
        for t in texts
    ]


@pytest.fixture(scope="module")
def tagger():
    keras.utils.set_random_seed(2)
    tokenizer = sp(SOURCE)
    model = SequenceTagger(
        tokenizer=tokenizer, tags=["W", "I"], embedding_dim=8, units=8
    )
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    model.fit(SOURCE, piece_tags(tokenizer, SOURCE), epochs=2, verbose=0)
    return model


@pytest.fixture(scope="module")
def translator():
    keras.utils.set_random_seed(3)
    model = Translator(
        sp(SOURCE), sp(TARGET), embedding_dim=8, units=8, max_target_length=10
    )
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    x, y = model.encode_pairs(SOURCE, TARGET)
    model.fit(x, y, epochs=2, verbose=0)
    return model


@pytest.fixture(scope="module")
def language_model():
    keras.utils.set_random_seed(4)
    model = AttentiveLanguageModel(
        tokenizer=sp(TARGET), embedding_dim=8, units=8, max_length=20
    )
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    model.fit(TARGET, epochs=1, verbose=0)
    return model


@pytest.mark.parametrize("check", CHECKS)
def test_classifier(classifier, check, tmp_path):
    run_task_test(classifier, SOURCE[:4], check, targets=LABELS[:4], tmp_path=tmp_path)


@pytest.mark.parametrize("check", CHECKS)
def test_tagger(tagger, check, tmp_path):
    tags = piece_tags(tagger.tokenizer, SOURCE[:4])
    run_task_test(tagger, SOURCE[:4], check, targets=tags, tmp_path=tmp_path)


@pytest.mark.parametrize("check", CHECKS)
def test_translator(translator, check, tmp_path):
    run_task_test(translator, SOURCE[:4], check, targets=TARGET[:4], tmp_path=tmp_path)


@pytest.mark.parametrize("check", CHECKS)
def test_language_model(language_model, check, tmp_path):
    run_task_test(language_model, TARGET[:4], check, tmp_path=tmp_path)


def test_a_preset_holds_the_model_files_with_checksums(translator, tmp_path):
    folder = translator.save_to_preset(str(tmp_path / "preset"))
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as file:
        files = json.load(file)["files"]
    for side in ("source_tokenizer", "target_tokenizer"):
        assert f"{side}.model" in files and f"{side}.json" in files
        proto = getattr(translator, side).model_proto
        with open(os.path.join(folder, f"{side}.model"), "rb") as file:
            assert file.read() == proto
        assert files[f"{side}.model"]["bytes"] == len(proto)


def test_export_writes_the_model_files(translator, tmp_path):
    # The tokenizer part of every export (TensorFlow itself is not needed here).
    manifest = {}
    write_tokenizers(translator, str(tmp_path), manifest)
    for side in ("source_tokenizer", "target_tokenizer"):
        entry = manifest["tokenizers"][side]
        assert entry["model_file"] == f"{side}.model"
        assert (entry["pad_id"], entry["bos_id"], entry["eos_id"]) == (0, 2, 3)
        processor = spm.SentencePieceProcessor(
            model_file=str(tmp_path / entry["model_file"])
        )
        tokenizer = getattr(translator, side)
        texts = SOURCE if side == "source_tokenizer" else TARGET
        assert [processor.encode(t) for t in texts] == [
            tokenizer.encode(t) for t in texts
        ]


# Translating with the .tflite files and the SentencePiece tokenizers' JSON, with
# neither Keras nor TensorFlow imported (sentencepiece and LiteRT only).
WITHOUT_TENSORFLOW = """
import json, sys
from ai_edge_litert.interpreter import Interpreter
from keras_rnnattn.text import Tokenizer

folder, length = sys.argv[1], int(sys.argv[2])
source = Tokenizer.load(f"{folder}/source_tokenizer.json")
target = Tokenizer.load(f"{folder}/target_tokenizer.json")
greedy = Interpreter(model_path=f"{folder}/greedy.tflite").get_signature_runner()
out = []
for text in sys.argv[3:]:
    ids = source.encode_batch([text], max_length=length, add_eos=True)
    out.append(target.decode(greedy(source_ids=ids)["tokens"][0]))
assert "keras" not in sys.modules and "tensorflow" not in sys.modules
print(json.dumps(out))
"""


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="exported in-process under TensorFlow; the other backends export "
    "through the same TensorFlow subprocess (tests/test_export.py)",
)
def test_tflite_translation_without_tensorflow(translator, tmp_path):
    pytest.importorskip("ai_edge_litert")
    folder = str(tmp_path / "lite")
    # Only the signature a device translates with: one conversion, one file.
    export.export_model(
        translator,
        folder,
        "tflite",
        batch_size=1,
        sequence_length=8,
        max_length=10,
        signatures=["greedy"],
    )
    files = set(os.listdir(folder))
    assert {"source_tokenizer.model", "target_tokenizer.model"} <= files
    assert {f for f in files if f.endswith(".tflite")} == {"greedy.tflite"}
    with open(os.path.join(folder, "export.json"), encoding="utf-8") as file:
        assert list(json.load(file)["signatures"]) == ["greedy"]
    env = {**os.environ, "PYTHONPATH": REPO}
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, folder, "8", *SOURCE[:4]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(result.stdout.strip().splitlines()[-1])
    ids = translator.source_tokenizer.encode_batch(
        SOURCE[:4], max_length=8, add_eos=True
    )
    tokens = np.asarray(translator.generate_ids(ids)[0])
    assert got == translator.target_tokenizer.decode_batch(tokens)
