"""Diacritics as per-character tags, against Unicode's own decompositions."""

import unicodedata

import pytest

from keras_rnnattn.text import (
    NO_MARK,
    CharTokenizer,
    apply_diacritics,
    diacritic_tags,
    strip_diacritics,
)
from keras_rnnattn.text.diacritics import (
    add_mark,
    char_ids,
    mark_name,
    marks_of,
    model_text,
    text_windows,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

CZECH = "Příliš žluťoučký kůň úpěl ďábelské ódy. Šťastný Nový rok!"
VIETNAMESE = "Tiếng Việt có dấu: Hà Nội, Đà Nẵng và Huế."


def reference_strip(text):
    """NFD, drop every combining mark after a letter, NFC: Unicode's answer."""
    out = []
    for char in unicodedata.normalize("NFC", text):
        decomposed = unicodedata.normalize("NFD", char)
        if decomposed[0].isalpha() and all(
            unicodedata.combining(m) for m in decomposed[1:]
        ):
            out.append(decomposed[0])
        else:
            out.append(char)
    return "".join(out)


@pytest.mark.parametrize("text", [CZECH, VIETNAMESE, "naïve café, Ærø, ø, 42 €"])
def test_strip_matches_unicode_and_tags_round_trip(text):
    stripped, tags = diacritic_tags(text)
    assert stripped == strip_diacritics(text) == reference_strip(text)
    assert len(stripped) == len(tags) == len(unicodedata.normalize("NFC", text))
    assert apply_diacritics(stripped, tags) == unicodedata.normalize("NFC", text)


def test_czech_tags_name_the_marks():
    assert diacritic_tags("ů č é")[1] == [
        "ring_above",
        NO_MARK,
        "caron",
        NO_MARK,
        "acute",
    ]
    assert mark_name("\u0323\u0302") == "dot_below+circumflex"
    assert marks_of("dot_below+circumflex") == "\u0323\u0302"
    assert add_mark("e", "dot_below+circumflex") == "ệ"


def test_marks_only_on_bare_letters_where_they_compose():
    assert add_mark("x", "caron") == "x"  # no precomposed x with caron
    assert add_mark("é", "caron") == "é"  # a mark already there is kept
    assert add_mark("1", "acute") == "1"
    assert add_mark("C", "caron") == "Č"  # case kept
    # t, r and a take a caron (ť ř ǎ); a space, a digit and x do not.
    assert apply_diacritics("Zitra 5x", ["caron", "acute"] + ["caron"] * 6) == (
        "Žíťřǎ 5x"
    )


def test_bad_tags_give_one_clear_error():
    with pytest.raises(ValueError, match="'acute', 'caron'"):
        marks_of("squiggle")
    with pytest.raises(ValueError, match="one tag per character"):
        apply_diacritics("abc", [NO_MARK])


@pytest.mark.parametrize("width", [1, 5, 8, 40])
def test_windows_cover_the_text_at_spaces(width):
    text = "jeden dva tri ctyri petpetpetpet sest"
    spans = text_windows(text, width)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(0 < b - a <= width for a, b in spans)
    assert all(a == b0 for (_, b0), (a, _) in zip(spans, spans[1:]))
    if width == 8:
        assert text[spans[0][0] : spans[0][1]] == "jeden "


def test_model_text_keeps_one_character_per_character():
    assert model_text("Zitra İstanbul") == "zitra İstanbul"
    tokenizer = CharTokenizer().fit(["ab c"])
    assert char_ids(tokenizer, "ab\u0301x") == [
        tokenizer.encode(c)[0] if tokenizer.encode(c) else tokenizer.unk_id
        for c in "ab\u0301x"
    ]
