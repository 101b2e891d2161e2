"""Punctuation and case as word tags (Tilk & Alumäe 2016's classes) and back."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    punctuation_tags,
    punctuation_windows,
    restore_punctuation,
    strip_punctuation,
    untagged_tokens,
)
from keras_rnnattn.text.normalization import split_words
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_the_twelve_tags():
    assert len(PUNCTUATION_TAGS) == 12 == len(set(PUNCTUATION_TAGS))
    assert PUNCTUATION_TAGS[0] == "lower_O" and "upper_QUESTION" in PUNCTUATION_TAGS


def test_marks_map_to_tilk_and_alumaes_classes():
    words, tags = punctuation_tags(
        "One, two: three - four. Five! Six; seven? Eight... “Nine,” she said"
    )
    assert words == [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
        "she", "said",
    ]  # fmt: skip
    assert [t.split("_")[1] for t in tags] == [
        "COMMA", "COMMA", "COMMA", "PERIOD", "PERIOD", "PERIOD", "QUESTION",
        "PERIOD", "COMMA", "O", "O",
    ]  # fmt: skip
    # The strongest of several marks counts; quotes are dropped.
    assert punctuation_tags("Really?!")[1] == ["title_QUESTION"]
    assert punctuation_tags("no, ... yes")[1] == ["lower_PERIOD", "lower_O"]


def test_case_classes_and_contractions():
    words, tags = punctuation_tags("I told NASA that Paris isn't far.")
    assert words == ["i", "told", "nasa", "that", "paris", "isn", "'t", "far"]
    assert [t.split("_")[0] for t in tags] == [
        "title", "lower", "upper", "lower", "title", "lower", "lower", "lower",
    ]  # fmt: skip
    assert restore_punctuation(words, tags) == "I told NASA that Paris isn't far."
    assert strip_punctuation("I told NASA that Paris isn't far.") == (
        "i told nasa that paris isn't far"
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("abcdefghij", min_size=2, max_size=6),
            st.sampled_from(PUNCTUATION_TAGS),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_tags_of_restored_text_are_the_tags_given(pairs):
    words = [w for w, _ in pairs]
    tags = [t for _, t in pairs]
    assert punctuation_tags(restore_punctuation(words, tags)) == (words, tags)


def test_restore_refuses_unknown_tags_and_length_mismatch():
    with pytest.raises(ValueError, match="one of"):
        restore_punctuation(["a"], ["COMMA"])
    with pytest.raises(ValueError, match="1 words and 2 tags"):
        restore_punctuation(["a"], ["lower_O", "lower_O"])


WINDOW_TEXT = (
    "He said, “Isn’t it late?” She answered: “It’s not; we’ll go.” "
    "Then they went to the city of David, and the king’s men followed."
)


@pytest.mark.parametrize("length", [2, 3, 5, 100])
def test_windows_cover_every_word_once_and_split_back(length):
    words, tags = punctuation_tags(WINDOW_TEXT)
    assert "’t" in words and "’s" in words  # clitics are words of their own
    texts, tag_lists = punctuation_windows(words, tags, length)
    # Each word once, in order; at most `length` words, each window's text
    # splits back into its words (no window starts with a clitic).
    assert [t for row in tag_lists for t in row] == tags
    assert all(0 < len(row) <= length for row in tag_lists)
    assert [w for text in texts for w in split_words(text)] == words
    for text, row in zip(texts, tag_lists):
        assert len(split_words(text)) == len(row)
        assert not text.startswith("’")


def test_overlapping_windows_start_every_stride():
    words = [f"w{i}" for i in range(10)]
    texts, _ = punctuation_windows(words, ["lower_O"] * 10, 4, 2)
    assert texts == ["w0 w1 w2 w3", "w2 w3 w4 w5", "w4 w5 w6 w7", "w6 w7 w8 w9",
                     "w8 w9"]  # fmt: skip


@pytest.mark.parametrize(
    "args, message",
    [((["a"], ["lower_O"], 1), "at least 2"), ((["a"], [], 2), "one tag per word")],
)
def test_windows_refuse_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        punctuation_windows(*args)


def test_untagged_tokens_go_back_in_their_place():
    text = "😀 i love 🍕, and café au-lait! € 5 🙂"
    words, tags = punctuation_tags(text)
    others = untagged_tokens(text)
    assert others == [(0, "😀"), (2, "🍕"), (5, "€"), (6, "🙂")]
    assert len(words) == len(strip_punctuation(text).split()) == 6
    restored = restore_punctuation(words, tags, others)
    assert restored == "😀 i love, 🍕 and café au-lait. € 5 🙂"  # "!" is a PERIOD
    # Every token but the punctuation marks is in the output, in order.
    assert [t for t in split_words(restored) if t not in ",.!"] == [
        t for t in split_words(text) if t not in ",.!"
    ]
    assert restore_punctuation([], [], [(0, "😀")]) == "😀"
