"""Tests of WordTokenizer."""

import numpy as np
import pytest

from keras_rnnattn.text import Tokenizer, WordTokenizer
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

TEXTS = [
    "Das Kind entwickelt sich normal.",
    "Das Kind schläft.",
    "Ist das Kind groß?",
    "Die Straße ist nass.",
]


def test_fit_encode_decode_round_trip():
    tok = WordTokenizer().fit(TEXTS)
    for text in TEXTS:
        ids = tok.encode(text, add_bos=True, add_eos=True)
        assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id
        assert tok.unk_id not in ids
        assert tok.decode(ids) == text
    # "." 3, "Kind" 3, "Das" 2 ("das" is another word): (count, token) order.
    assert tok.vocabulary.tokens[4:7] == [".", "Kind", "Das"]


def test_lowercase_and_unknown_words():
    tok = WordTokenizer(lowercase=True).fit(TEXTS)
    assert tok.tokenize("DAS KIND.") == ["das", "kind", "."]
    assert tok.encode("Das Kind") == tok.encode("das kind")
    assert tok.encode("Völlig unbekannte Wörter") == [tok.unk_id] * 3
    assert tok.decode(tok.encode("Das Monster schläft.")) == "das <unk> schläft."
    assert tok.encode("") == []
    assert tok.encode("", add_bos=True, add_eos=True) == [tok.bos_id, tok.eos_id]


def test_min_count_and_max_vocab():
    tok = WordTokenizer(min_count=2).fit(TEXTS)
    # The words seen at least twice.
    assert set(tok.vocabulary.tokens[4:]) == {".", "Das", "Kind"}
    small = WordTokenizer(max_vocab=6).fit(TEXTS)
    assert small.vocabulary_size == 6
    assert small.encode("Das Kind") == [tok.unk_id, 5]


def test_save_load_json(tmp_path):
    tok = WordTokenizer(lowercase=True, min_count=1).fit(TEXTS)
    path = tmp_path / "tok.json"
    tok.save(path)
    again = Tokenizer.load(path)
    assert isinstance(again, WordTokenizer)
    assert again.get_config() == tok.get_config()
    batch = ["Das Kind ist nass.", "Unbekannt!"]
    np.testing.assert_array_equal(again.encode_batch(batch), tok.encode_batch(batch))
    assert "straße" in path.read_text(encoding="utf-8")  # JSON keeps UTF-8 text


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_vocab=2"):
        WordTokenizer(max_vocab=2)
    with pytest.raises(ValueError, match="not one str"):
        WordTokenizer().fit("Das Kind.")
    with pytest.raises(ValueError, match="call `fit"):
        WordTokenizer().encode("x")
