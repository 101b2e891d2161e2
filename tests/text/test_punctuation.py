"""Punctuation and case as word tags (Tilk & Alumäe 2016's classes) and back."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    punctuation_tags,
    restore_punctuation,
    strip_punctuation,
)
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
