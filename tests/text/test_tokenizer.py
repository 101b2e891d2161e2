"""Tests of the shared Tokenizer behaviour: batches, padding, decoding, files, tf.data."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_rnnattn.text import (
    BpeTokenizer,
    CharTokenizer,
    Tokenizer,
    WordTokenizer,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

TEXTS = ["Das Kind entwickelt sich normal.", "Es regnet.", ""]
CLASSES = [WordTokenizer, CharTokenizer, BpeTokenizer]


def fitted(cls):
    if cls is BpeTokenizer:
        return cls(num_merges=20).fit(TEXTS)
    return cls().fit(TEXTS)


@pytest.mark.parametrize("cls", CLASSES)
def test_encode_batch_pads_post_and_pre(cls):
    tok = fitted(cls)
    rows = [tok.encode(t, add_bos=True, add_eos=True) for t in TEXTS]
    longest = max(len(r) for r in rows)
    post = tok.encode_batch(TEXTS, add_bos=True, add_eos=True)
    pre = tok.encode_batch(TEXTS, add_bos=True, add_eos=True, padding="pre")
    assert post.dtype == np.int32 and post.shape == (3, longest)
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(post[i, : len(row)], row)
        np.testing.assert_array_equal(post[i, len(row) :], 0)
        np.testing.assert_array_equal(pre[i, longest - len(row) :], row)
        np.testing.assert_array_equal(pre[i, : longest - len(row)], 0)
    assert tok.decode_batch(post) == TEXTS
    assert tok.decode_batch(pre) == TEXTS


@pytest.mark.parametrize("cls", CLASSES)
def test_truncation_keeps_bos_and_eos_or_raises(cls):
    tok = fitted(cls)
    full = tok.encode(TEXTS[0])
    out = tok.encode_batch(TEXTS, max_length=5, add_bos=True, add_eos=True)
    assert out.shape == (3, 5)
    assert out[0].tolist() == [tok.bos_id] + full[:3] + [tok.eos_id]
    assert out[2].tolist() == [tok.bos_id, tok.eos_id, 0, 0, 0]
    with pytest.raises(ValueError, match="truncate=True"):
        tok.encode_batch(TEXTS, max_length=5, truncate=False)
    with pytest.raises(ValueError, match="max_length=1"):
        tok.encode_batch(TEXTS, max_length=1, add_bos=True, add_eos=True)
    with pytest.raises(ValueError, match="padding='mid'"):
        tok.encode_batch(TEXTS, padding="mid")


@pytest.mark.parametrize("cls", CLASSES)
def test_decode_stops_at_eos_and_skips_pad_and_bos(cls):
    tok = fitted(cls)
    ids = tok.encode("Es regnet.")
    seq = [tok.bos_id] + ids + [tok.eos_id] + ids + [tok.pad_id]
    assert tok.decode(seq) == "Es regnet."
    assert tok.decode(np.array(seq, dtype="int64")) == "Es regnet."
    raw = tok.decode([tok.bos_id] + ids + [tok.eos_id], skip_special=False)
    assert raw.startswith("<bos>") and raw.endswith("<eos>")
    assert "Es" in raw
    with pytest.raises(ValueError, match="decode_batch"):
        tok.decode(np.zeros((2, 2), dtype="int32"))


@pytest.mark.parametrize("cls", CLASSES)
def test_empty_text_and_unknown_text(cls):
    tok = fitted(cls)
    assert tok.encode("") == []
    assert tok.encode("", add_bos=True, add_eos=True) == [2, 3]
    ids = tok.encode("XQZ", add_eos=True)
    if cls is WordTokenizer:
        assert ids == [tok.unk_id, tok.eos_id]
    elif cls is CharTokenizer:
        assert ids == [tok.unk_id] * 3 + [tok.eos_id]
    else:  # the lone end-of-word mark follows a final unk
        end_of_word = tok.vocabulary.token_to_id("</w>")
        assert ids == [tok.unk_id] * 3 + [end_of_word, tok.eos_id]
    assert tok.encode_batch([]).shape == (0, 0)


@pytest.mark.parametrize("cls", CLASSES)
def test_json_file_is_plain_data_and_loads_back(cls, tmp_path):
    tok = fitted(cls)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["class_name"] == cls.__name__
    assert data["config"]["vocabulary"]["tokens"] == tok.vocabulary.tokens[4:]
    again = Tokenizer.load(path)
    assert type(again) is cls
    for text in TEXTS:
        assert again.encode(text) == tok.encode(text)
    other = WordTokenizer if cls is not WordTokenizer else CharTokenizer
    with pytest.raises(ValueError, match=f"holds a {cls.__name__}"):
        other.load(path)


@pytest.mark.parametrize("cls", CLASSES)
def test_load_reads_the_tokenizer_files_of_an_export(cls, tmp_path):
    # export_model writes {"class_name", "config"}; the export guide's LiteRT snippet
    # reads them with Tokenizer.load, whichever tokenizer the model has.
    tok = fitted(cls)
    path = tmp_path / "source_tokenizer.json"
    data = {"class_name": cls.__name__, "config": tok.get_config()}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    again = Tokenizer.load(path)
    assert type(again) is cls
    ids = again.encode_batch(TEXTS[:2], max_length=12, add_eos=True)
    np.testing.assert_array_equal(
        ids, tok.encode_batch(TEXTS[:2], max_length=12, add_eos=True)
    )
    assert again.decode(ids[1]) == tok.decode(ids[1])


def test_get_config_from_config_round_trip():
    tok = BpeTokenizer(max_vocab=60, lowercase=True, min_count=1).fit(TEXTS)
    again = BpeTokenizer.from_config(tok.get_config())
    assert again.get_config() == tok.get_config()
    assert again.tokenize("Das Kind") == tok.tokenize("Das Kind")


def test_to_tf_dataset():
    tf = pytest.importorskip("tensorflow")
    tok = WordTokenizer().fit(TEXTS)
    ds = tok.to_tf_dataset(TEXTS, labels=[1, 0, 1], max_length=8, add_eos=True)
    rows = list(ds.as_numpy_iterator())
    assert len(rows) == 3
    np.testing.assert_array_equal(
        rows[1][0], tok.encode_batch(TEXTS, 8, add_eos=True)[1]
    )
    assert rows[1][1] == 0
    assert ds.element_spec[0] == tf.TensorSpec((8,), tf.int32)
    with pytest.raises(ValueError, match="len\\(labels\\)=2"):
        tok.to_tf_dataset(TEXTS, labels=[1, 0])


def test_package_import_does_not_import_tensorflow():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        "import sys; import keras_rnnattn.text, keras_rnnattn.datasets; "
        "print([m for m in ('tensorflow', 'tensorflow_datasets') if m in sys.modules])"
    )
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=root)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
