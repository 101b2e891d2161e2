"""Word and phoneme error rates of grapheme-to-phoneme output: by hand, and the
edit distance against nltk's and a brute-force recursion."""

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_rnnattn.metrics import phoneme_error_rate, word_error_rate
from keras_rnnattn.metrics.error_rates import _edit_distance
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_word_error_rate_accepts_any_listed_pronunciation():
    hyps = ["R IY1 D", "R EH1 D", "K AE1 T", "D  AO1 G "]
    refs = [("R EH1 D", "R IY1 D"), ["R EH1 D"], "K AH1 T", "D AO1 G"]
    # Only "K AE1 T" is wrong; spacing does not count.
    assert word_error_rate(hyps, refs) == 25.0


def test_phoneme_error_rate_by_hand():
    # One substitution against the 3-phoneme reference; then the closer of two
    # references counts (the second: one insertion short of its 5 phonemes).
    hyps = ["K AE1 T", "S T R IY1"]
    refs = ["K AH1 T", ["S IY1", "S T R IY1 T"]]
    assert phoneme_error_rate(hyps, refs) == pytest.approx(100 * 2 / 8)
    # An empty hypothesis costs the whole reference; an insertion counts too.
    assert phoneme_error_rate([""], ["A B C"]) == 100.0
    assert phoneme_error_rate(["A B C D"], ["A B C"]) == pytest.approx(100 / 3)


def test_phoneme_error_rate_refuses_only_empty_references():
    with pytest.raises(ValueError, match="every reference is empty"):
        phoneme_error_rate(["A"], [""])
    with pytest.raises(ValueError, match="not one str"):
        word_error_rate("A B", ["A B"])


@functools.cache
def _recursive(a, b):
    if not a or not b:
        return len(a) + len(b)
    return min(
        _recursive(a[1:], b) + 1,
        _recursive(a, b[1:]) + 1,
        _recursive(a[1:], b[1:]) + (a[0] != b[0]),
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from("ABC"), max_size=7),
    st.lists(st.sampled_from("ABC"), max_size=7),
)
def test_edit_distance_equals_the_recursive_definition(a, b):
    assert _edit_distance(a, b) == _recursive(tuple(a), tuple(b))


def test_edit_distance_equals_nltks():
    nltk_metrics = pytest.importorskip("nltk.metrics.distance")
    pairs = [
        ("AH0 B AW1 T".split(), "AH0 B AW1 T S".split()),
        ("K AE1 T".split(), "T AE1 K".split()),
        ("HH AH0 L OW1".split(), "HH EH0 L OW1 W ER1 L D".split()),
        ([], "A B".split()),
    ]
    for a, b in pairs:
        assert _edit_distance(a, b) == nltk_metrics.edit_distance(a, b)
