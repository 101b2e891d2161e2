"""Symbols a translator cannot read (emoji) leave its input and come back in its output."""

import numpy as np

from keras_rnnattn.text import BpeTokenizer, WordTokenizer
from keras_rnnattn.text.kept_symbols import (
    insert_symbols,
    split_symbols,
    symbol_weights,
)
from keras_rnnattn.text.unknown_words import decode_translations
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

SOURCE = WordTokenizer().fit(["ich liebe pizza und käse ."])
TARGET = WordTokenizer().fit(["i love pizza and cheese ."])


def test_symbols_leave_the_source_with_the_tokens_before_them():
    assert split_symbols(SOURCE, "ich liebe 🍕 und käse 😀") == (
        "ich liebe und käse",
        [("🍕", 2), ("😀", 4)],
    )
    # Punctuation the vocabulary knows stays; an unknown *word* stays (it is
    # the unknown-word replacement's to copy); so does a text without symbols.
    assert split_symbols(SOURCE, "ich liebe zürich .") == ("ich liebe zürich .", [])
    assert split_symbols(SOURCE, "😀 😀") == ("", [("😀", 0), ("😀", 0)])
    # A subword tokenizer reads the emoji as an unknown piece plus a word end.
    bpe = BpeTokenizer(num_merges=20).fit(["ich liebe pizza und käse"])
    assert bpe.unk_id in bpe.encode("🍕")
    assert split_symbols(bpe, "ich liebe 🍕 und käse") == (
        "ich liebe und käse",
        [("🍕", len(bpe.tokenize("ich liebe")))],
    )


def test_a_symbol_goes_after_the_step_attending_to_the_word_before_it():
    weights = np.eye(4)  # step t attends to source token t
    # Preceded by 2 source tokens: after the step that attends to token 1.
    assert insert_symbols([7, 8, 9, 10], [("🍕", 2)], weights, 4, 1, 2) == (
        [7, 8, 1, 9, 10],
        [0, 1, ("symbol", 0), 2, 3],
    )
    # At the start, at the end (after the end token nothing is read), and
    # without attention by relative place.
    assert insert_symbols([7, 8, 2, 5], [("a", 0), ("b", 4)], weights, 4, 1, 2)[0] == [
        1,
        7,
        8,
        1,
    ]
    assert insert_symbols([7, 8, 9, 10], [("🍕", 2)], None, 4, 1, 2)[0] == [
        7,
        8,
        1,
        9,
        10,
    ]
    rows = [0, ("symbol", 0), 1]
    np.testing.assert_allclose(
        symbol_weights(rows, np.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.0]]), 2, 1),
        [[0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [0.2, 0.8, 0.0]],
    )


def test_translations_get_their_symbols_back_where_the_attention_points():
    reduced, symbols = split_symbols(SOURCE, "ich liebe 🍕 und käse 😀")
    source_ids = np.array([SOURCE.encode(reduced) + [SOURCE.eos_id]])
    tokens = np.array([TARGET.encode("i love and cheese") + [TARGET.eos_id]])
    weights = np.eye(5)[None]  # a word-for-word alignment

    def alignments(source, target):
        assert source.shape == source_ids.shape and target.shape == tokens.shape
        return weights

    (translation,) = decode_translations(
        (SOURCE, TARGET), [reduced], source_ids, tokens, alignments, symbols=[symbols]
    )
    assert translation == "i love 🍕 and cheese 😀"
    # Without attention: by relative place among the words.
    (translation,) = decode_translations(
        (SOURCE, TARGET), [reduced], source_ids, tokens, None, symbols=[symbols]
    )
    assert translation == "i love 🍕 and cheese 😀"
