"""Tests of Vocabulary."""

import collections

import pytest

from keras_rnnattn.text import Vocabulary
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_special_ids_are_fixed():
    vocab = Vocabulary(["x"])
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    assert vocab.tokens[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert vocab.token_to_id("x") == 4
    assert vocab.token_to_id("missing") == vocab.unk_id


def test_build_orders_by_count_then_token_and_applies_limits():
    texts = [["b", "a", "c", "b"], ["c", "b", "d"], ["a", "e"]]
    vocab = Vocabulary.build(texts)
    # counts: b 3, a 2, c 2, d 1, e 1
    assert vocab.tokens[4:] == ["b", "a", "c", "d", "e"]
    assert Vocabulary.build(texts, min_count=2).tokens[4:] == ["b", "a", "c"]
    assert Vocabulary.build(texts, max_size=6).tokens[4:] == ["b", "a"]
    assert len(Vocabulary.build(texts, max_size=6)) == 6
    # The same counts in another order give the same vocabulary.
    assert Vocabulary.build(texts[::-1]).tokens == vocab.tokens
    counts = collections.Counter(t for text in texts for t in text)
    assert Vocabulary.build(counts).tokens == vocab.tokens


def test_build_ignores_special_tokens_in_the_text():
    vocab = Vocabulary.build([["<unk>", "<pad>", "a"]])
    assert vocab.tokens == ["<pad>", "<unk>", "<bos>", "<eos>", "a"]


def test_config_round_trip_and_id_to_token():
    vocab = Vocabulary(["über", "ß"], special_tokens=("[P]", "[U]", "[B]", "[E]"))
    again = Vocabulary.from_config(vocab.get_config())
    assert again.tokens == vocab.tokens
    assert again.id_to_token(5) == "ß"
    with pytest.raises(ValueError, match="Received: token_id=6"):
        again.id_to_token(6)


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="distinct"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="special"):
        Vocabulary(["<eos>"])
    with pytest.raises(ValueError, match="min_count=0"):
        Vocabulary.build([["a"]], min_count=0)
    with pytest.raises(ValueError, match="max_size=3"):
        Vocabulary.build([["a"]], max_size=3)
