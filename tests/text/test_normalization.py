"""Tests of normalisation, word splitting and detokenisation."""

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_rnnattn.text import detokenize, normalize, split_words
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

ROUND_TRIP = [
    "Das Kind entwickelt sich normal.",
    "The film faithfully follows Shakespeare’s plot.",
    "Der Film folgt genau der Shakespear’schen Handlung.",
    "Where is the station? I don't know!",
    "Er sagte: „Ich komme morgen.“",
    "She said, “Let there be light,” and there was light.",
    'He said "hello" to me; then he left.',
    "The 'quoted' word (in brackets) [and more] {too}.",
    "It costs 3.50 euros, that is 1,000 cents at 10:30.",
    "Feuerwehr- und Rettungsfahrzeuge kamen.",
    "Wir streben Zufriedenheit und -motivation an.",
    "Das ist die A-Dur-Tonleiter, nicht wahr?",
    "Jesus’ life and deeds; “God hears.”",
    "Äpfel, Öl und Übermut: groß, süß, weiß.",
    "Ja/Nein, 50% oder mehr…",
    "¿Qué? ¡No!",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_detokenize_restores_natural_text(text):
    assert detokenize(split_words(text)) == text


def test_split_words_splits_punctuation_and_keeps_words():
    assert split_words("Das Kind entwickelt sich normal.") == [
        "Das", "Kind", "entwickelt", "sich", "normal", ".",
    ]  # fmt: skip
    assert split_words("Shakespeare’s plot, isn't it?") == [
        "Shakespeare", "’s", "plot", ",", "isn", "'t", "it", "?",
    ]  # fmt: skip
    assert split_words("„Hallo“ (Gruß) - 3.5 kg") == [
        "„", "Hallo", "“", "(", "Gruß", ")", "-", "3.5", "kg",
    ]  # fmt: skip
    assert split_words("rock 'n' roll") == ["rock", "'", "n", "'", "roll"]
    assert split_words("Groß- und Kleinschreibung") == [
        "Groß-", "und", "Kleinschreibung",
    ]  # fmt: skip
    assert split_words("") == []
    assert split_words("  \n ") == []


def test_normalize_nfc_and_lowercase_keep_umlauts_and_sharp_s():
    decomposed = "Gru\u0308n"  # u + combining diaeresis
    assert normalize(decomposed) == "Grün"
    assert len(normalize(decomposed)) == 4
    assert normalize("ÄÖÜ Straße", lowercase=True) == "äöü straße"
    assert normalize("ÄÖÜ Straße") == "ÄÖÜ Straße"


def test_normalize_rejects_non_str():
    with pytest.raises(ValueError, match="Received: text=b'x'"):
        normalize(b"x")


def test_detokenize_no_space_before_closing_punctuation():
    assert detokenize(["a", ".", "b", ",", "c", "!", "d", "?", "e", ";", "f", ":"]) == (
        "a. b, c! d? e; f:"
    )
    assert detokenize(["(", "x", ")", "y"]) == "(x) y"
    assert detokenize([]) == ""


_ALPHABET = "abÄß1 .,!?;:()[]\"'’‘“„-/%"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=_ALPHABET + string.ascii_letters[:3], max_size=30))
def test_detokenized_text_splits_into_the_same_tokens(text):
    tokens = split_words(text)
    assert split_words(detokenize(tokens)) == tokens
