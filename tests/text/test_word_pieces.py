"""Word tags on subword pieces: a word's case on its first piece, its mark on its last."""

import random

import pytest

from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    SentencePieceTokenizer,
    punctuation_tags,
)
from keras_rnnattn.text.word_pieces import piece_tags, word_piece_ids, word_tags
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras model: the same on every backend


def test_piece_tags_and_word_tags_are_inverse():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(0, 12)
        lengths = [rng.randint(1, 4) for _ in range(n)]
        tags = [rng.choice(PUNCTUATION_TAGS) for _ in range(n)]
        pieces = piece_tags(lengths, tags)
        assert len(pieces) == sum(lengths)
        assert word_tags(lengths, pieces) == tags
        # Only a word's first piece is cased and only its last carries a mark.
        start = 0
        for n_pieces in lengths:
            inner = pieces[start + 1 : start + n_pieces]
            assert all(t.startswith("lower_") for t in inner)
            assert all(t.endswith("_O") for t in pieces[start : start + n_pieces - 1])
            start += n_pieces


def test_bad_lengths_and_tags_raise():
    with pytest.raises(ValueError, match="one tag per word"):
        piece_tags([1, 2], ["lower_O"])
    with pytest.raises(ValueError, match="one tag per piece"):
        word_tags([2], ["lower_O"])
    with pytest.raises(ValueError, match="must be one of"):
        word_tags([1], ["COMMA"])


def test_each_word_encoded_alone_gives_the_pieces_of_the_running_text():
    text = (
        "To reset your password, open the Settings page. Isn't it simple? "
        "Then choose the Security tab and enter your old password."
    )
    words, _ = punctuation_tags(text)
    tok = SentencePieceTokenizer(vocabulary_size=60, lowercase=True).fit([text] * 3)
    pieces = word_piece_ids(tok, words + ["zebra"])  # unseen letters too
    assert all(len(p) >= 1 for p in pieces)
    assert [i for p in pieces[:-1] for i in p] == tok.encode(" ".join(words))
    # A word never seen keeps pieces (here its letters), not one unknown id.
    assert len(pieces[words.index("password")]) <= len("password")
    assert len(word_piece_ids(tok, ["passwords"])[0]) > 1
