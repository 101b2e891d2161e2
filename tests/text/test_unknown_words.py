"""Unknown-word replacement (Luong et al. 2015) on given alignments."""

import numpy as np

from keras_rnnattn.text import BpeTokenizer, WordTokenizer
from keras_rnnattn.text.unknown_words import (
    decode_translations,
    replace_unknown,
    source_words,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

TARGET = WordTokenizer().fit(["I met her in the city ."])


def test_each_unknown_token_copies_the_word_its_attention_points_at():
    ids = TARGET.encode("I met Ada in Zürich .")  # two unknown words
    words = ["Ich", "traf", "Ada", "in", "Zürich", "."]
    weights = np.full((6, 7), 0.01)  # 6 steps over 6 words and the end token
    weights[2, 2] = weights[4, 4] = 1.0  # the unknown steps: Ada and Zürich
    weights[:, 6] = 0.5  # the end token is never copied
    assert replace_unknown(TARGET, ids, words, weights) == "I met Ada in Zürich."
    # After the end token nothing is read.
    with_eos = ids + [TARGET.eos_id, TARGET.unk_id]
    assert replace_unknown(TARGET, with_eos, words, weights) == "I met Ada in Zürich."


def test_unknown_tokens_in_a_row_on_one_word_copy_it_once():
    unk = TARGET.unk_id
    words = ["私は猫が好きです", "."]
    weights = np.tile([0.9, 0.1], (4, 1))
    ids = [unk, unk, unk, TARGET.encode(".")[0]]
    assert replace_unknown(TARGET, ids, words, weights) == "私は猫が好きです."


def test_without_attention_the_unknown_source_words_are_copied_in_order():
    source = WordTokenizer().fit(["ich traf sie in der stadt ."])
    text = "ich traf Ada in Zürich ."
    source_ids = source.encode(text)
    ids = TARGET.encode("I met Ada in Zürich .")
    got = replace_unknown(TARGET, ids, source_words(source, text), None, source_ids)
    assert got == "I met Ada in Zürich."


def test_source_words_of_subword_tokens():
    bpe = BpeTokenizer(num_merges=10).fit(["the cat sat on the mat"])
    assert len(bpe.tokenize("the Zorro cat")) == 8
    assert source_words(bpe, "the Zorro cat") == ["the"] + ["Zorro"] * 5 + ["cat"] * 2


def test_a_batch_asks_for_alignments_only_for_rows_with_unknown_tokens():
    source = WordTokenizer().fit(["ich traf sie ."])
    texts = ["ich traf sie .", "ich traf Ada ."]
    tokens = np.array([TARGET.encode("I met her .", add_eos=True),
                       TARGET.encode("I met Ada .", add_eos=True)])  # fmt: skip
    source_ids = np.array([source.encode(t, add_eos=True) for t in texts])
    calls = []

    def alignments(rows_source, rows_tokens):
        calls.append(rows_source.tolist())
        return np.tile(np.eye(5)[:, :5], (len(rows_source), 1, 1))

    tokenizers = (source, TARGET)
    out = decode_translations(tokenizers, texts, source_ids, tokens, alignments)
    assert out == ["I met her.", "I met Ada."]
    assert calls == [source_ids[1:].tolist()]
    kept = decode_translations(tokenizers, texts, source_ids, tokens, alignments, False)
    assert kept == ["I met her.", "I met <unk>."] and len(calls) == 1
