"""PunctuationStream: central windows, and the same text however the words arrive."""

import random

import keras
import pytest

from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.models._punctuation_windows import central_windows
from keras_rnnattn.models.punctuation_stream import PunctuationStream
from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    SentencePieceTokenizer,
    WordTokenizer,
    punctuation_tags,
    strip_punctuation,
)

WORDS = (
    "the city council voted on tuesday to expand the bike lanes along main "
    "street isn't that what the shop owners wanted asked the mayor"
).split()


@pytest.mark.parametrize("window, stride", [(4, 2), (16, 8), (10, 3), (9, 9)])
def test_each_word_is_decided_once_by_the_window_where_it_is_central(window, stride):
    margin = (window - stride) // 2
    for n in range(0, 60):
        windows = central_windows(n, window, stride)
        kept = [i for _, _, a, b in windows for i in range(a, b)]
        assert kept == list(range(n))
        for start, end, a, b in windows:
            assert start <= a <= b <= end and end - start <= window
            for i in range(a, b):  # far from an edge the text does not have
                assert i - start >= margin or start == 0
                assert end - 1 - i >= window - stride - margin - 1 or end == n


def _tagger(tokenizer, max_length, seed=3):
    keras.utils.set_random_seed(seed)
    return SequenceTagger(
        tokenizer=tokenizer, tags=PUNCTUATION_TAGS, units=4, embedding_dim=4,
        max_length=max_length,
    )  # fmt: skip


def test_a_5000_word_text_restores_the_same_however_it_is_split():
    rng = random.Random(0)
    words = [rng.choice(WORDS) for _ in range(5000)]
    for i in range(0, 5000, 397):  # emoji and symbols, left in place
        words.insert(i, "😀" if i % 2 else "€")
    text = " ".join(words)
    tagger = _tagger(WordTokenizer(lowercase=True).fit([" ".join(WORDS)]), 32)
    whole = tagger.restore_punctuation(text)  # overlapping windows of 32 words
    # Every word back (an untrained tagger may put a mark inside "isn't").
    letters = [ch for ch in whole.lower() if ch.isalnum()]
    assert letters == [ch for ch in text if ch.isalnum()]
    assert whole.count("😀") == text.count("😀") and whole.count("€") == text.count("€")
    stream = PunctuationStream(tagger)
    for cuts in ([1, 7, 33], [16, 17], [4999]):  # pieces of the text
        pieces, start = [], 0
        while start < len(words):
            size = cuts[len(pieces) % len(cuts)]
            pieces.append(" ".join(words[start : start + size]))
            start += size
        out = "".join(stream.push(piece) for piece in pieces) + stream.finish()
        assert out == whole
    # Its batched tags: one per word, from the same windows.
    words = punctuation_tags(text)[0]  # "isn't" is two words
    assert len(stream.word_tags(words)) == len(words) > 5000


def test_the_stream_returns_words_once_their_window_is_complete():
    tagger = _tagger(WordTokenizer(lowercase=True).fit([" ".join(WORDS)]), 8)
    stream = PunctuationStream(tagger)  # windows of 8 words, every 4
    assert stream.push("the city council voted on tuesday to expand") == ""
    out = stream.push("the")  # the first window is complete: words 0..5 decided
    assert len(strip_punctuation(out).split()) == 6
    rest = stream.finish()
    assert (
        strip_punctuation(out + rest)
        == "the city council voted on tuesday to expand the"
    )
    assert rest[-1] in ".?" and stream.finish() == ""


@pytest.mark.parametrize("window", [8, 16])
def test_the_stated_delay_is_the_delay_words_pushed_one_by_one_see(window):
    words = ([w for w in WORDS if "'" not in w] * 4)[: 5 * window]
    tagger = _tagger(WordTokenizer(lowercase=True).fit([" ".join(WORDS)]), window)
    stream = PunctuationStream(tagger, window)
    emitted_at = []  # for each word, how many words had arrived when returned
    for n, word in enumerate(words, 1):
        returned = len(strip_punctuation(stream.push(word)).split())
        emitted_at += [n] * returned
    waits = [at - (i + 1) for i, at in enumerate(emitted_at)]
    assert max(waits) == window  # the first words wait for a whole window
    steady = waits[window:]
    assert (min(steady), max(steady)) == stream.delay_words
    assert PunctuationStream(tagger, 64).delay_words == (17, 48)


def test_subword_taggers_restore_whole_words():
    tok = SentencePieceTokenizer(vocabulary_size=40, lowercase=True).fit(
        [" ".join(WORDS)] * 3
    )
    tagger = _tagger(tok, 16)  # windows of 8 words
    text = " ".join(WORDS * 3) + " zebras"
    restored = tagger.restore_punctuation(text)
    assert [c for c in restored.lower() if c.isalnum()] == [
        c for c in text if c.isalnum()
    ]
    stream = PunctuationStream(tagger)
    assert stream.window == 8
    assert "".join(stream.push(w) for w in text.split()) + stream.finish() == restored


def test_bad_arguments_name_the_fix():
    tagger = _tagger(WordTokenizer(lowercase=True).fit(["a b"]), 8)
    with pytest.raises(ValueError, match="window"):
        PunctuationStream(tagger, window=2)
    with pytest.raises(ValueError, match="str of words"):
        PunctuationStream(tagger).push(["a", "b"])
    other = SequenceTagger(
        tokenizer=WordTokenizer().fit(["a b"]), tags=["A", "B"], units=4
    )
    with pytest.raises(ValueError, match="PUNCTUATION_TAGS"):
        PunctuationStream(other)
