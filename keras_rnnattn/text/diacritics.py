"""Diacritics as per-character tags: the mark each letter carries, or none.

A letter with diacritics is, in Unicode's canonical decomposition (NFD), its
base letter followed by combining marks: `č` is `c` + U+030C (caron), `ệ` is
`e` + U+0323 (dot below) + U+0302 (circumflex). A text typed without
diacritics keeps the base letters; a character tagger puts the marks back,
one tag per character: the names of the marks to add (`"caron"`,
`"dot_below+circumflex"`), or `NO_MARK`. Only a mark sequence that composes
with its letter into one character (NFC) is applied, so the output differs
from the input only in marks on letters.
"""

import unicodedata

NO_MARK = "none"


def mark_name(marks):
    """The tag of a sequence of combining marks: their names joined with `+`.

    Args:
        marks: str of combining characters (empty for none).

    Returns:
        str: `NO_MARK` for no marks, else e.g. `"acute"`, `"ring_above"`,
        `"dot_below+circumflex"`.

    Example:

    >>> mark_name("\\u030c"), mark_name("")
    ('caron', 'none')
    """
    if not marks:
        return NO_MARK
    names = []
    for mark in marks:
        name = unicodedata.name(mark, "").removeprefix("COMBINING ")
        names.append(name.removesuffix(" ACCENT").lower().replace(" ", "_"))
    return "+".join(names)


def marks_of(tag):
    """The combining marks a tag names (`mark_name`'s inverse).

    Args:
        tag: str, `NO_MARK` or mark names joined with `+`.

    Returns:
        str of combining characters.

    Raises:
        ValueError: a name that is no combining mark.

    Example:

    >>> marks_of("acute") == "\\u0301"
    True
    """
    if tag == NO_MARK:
        return ""
    out = []
    for name in tag.split("+"):
        base = "COMBINING " + name.upper().replace("_", " ")
        for candidate in (base, base + " ACCENT"):
            try:
                out.append(unicodedata.lookup(candidate))
                break
            except KeyError:
                continue
        else:
            raise ValueError(
                f"Unknown diacritic tag: expected {NO_MARK!r} or combining mark "
                f"names joined with '+' (e.g. 'acute', 'caron'). Received: {tag!r}"
            )
    return "".join(out)


def split_marks(char):
    """`(base, marks)` of one character: its letter and its combining marks.

    A character that is not a letter with marks (a digit, `ø`, a space) is
    its own base with no marks.

    Example:

    >>> split_marks("ů") == ("u", "\\u030a")
    True
    """
    decomposed = unicodedata.normalize("NFD", char)
    base, marks = decomposed[0], decomposed[1:]
    if (
        len(base.encode("utf-16-le")) != 2
        or not base.isalpha()
        or not marks
        or not all(unicodedata.combining(m) for m in marks)
    ):
        return char, ""
    return base, marks


def strip_diacritics(text):
    """The text without the marks on its letters, one character for one.

    The text is read in NFC; each letter with marks becomes its base letter,
    every other character is kept, so the result has the same length.

    Args:
        text: str.

    Returns:
        str.

    Example:

    >>> strip_diacritics("Žluťoučký kůň úpěl")
    'Zlutoucky kun upel'
    """
    return "".join(split_marks(c)[0] for c in unicodedata.normalize("NFC", text))


def diacritic_tags(text):
    """The text without marks and the tag of each of its characters.

    Args:
        text: str (read in NFC).

    Returns:
        `(stripped, tags)`: str and a list of str, one tag per character of
        `stripped` (`mark_name` of what its letter carried).

    Example:

    >>> diacritic_tags("Čaj")
    ('Caj', ['caron', 'none', 'none'])
    """
    pairs = [split_marks(c) for c in unicodedata.normalize("NFC", text)]
    return "".join(b for b, _ in pairs), [mark_name(m) for _, m in pairs]


def add_mark(char, tag):
    """`char` with the marks `tag` names, where they compose into one letter.

    Args:
        char: str, one character.
        tag: str, a diacritic tag.

    Returns:
        str, one character: the marked letter, or `char` unchanged (no
        marks, not a bare letter, or marks that do not compose with it).

    Example:

    >>> add_mark("e", "caron"), add_mark("x", "caron"), add_mark("é", "caron")
    ('ě', 'x', 'é')
    """
    if tag == NO_MARK or split_marks(char)[1] or not char.isalpha():
        return char
    composed = unicodedata.normalize("NFC", char + marks_of(tag))
    return composed if len(composed) == 1 else char


def apply_diacritics(text, tags):
    """Puts the tagged marks on the letters of a text.

    Args:
        text: str in NFC, one tag per character.
        tags: list of str.

    Returns:
        str of the same length: letters that already carry marks, and
        characters whose marks do not compose, are kept as they are.

    Raises:
        ValueError: `tags` is not one per character.

    Example:

    >>> apply_diacritics("Zitra", ["caron", "acute", "none", "none", "none"])
    'Žítra'
    """
    if len(tags) != len(text):
        raise ValueError(
            f"apply_diacritics: one tag per character: {len(text)} characters "
            f"but {len(tags)} tags."
        )
    return "".join(add_mark(c, t) for c, t in zip(text, tags))


def model_text(stripped):
    """What a diacritics tagger reads: the text without marks, lowercased
    letter by letter (a letter whose lowercase is longer, like `İ`, kept as
    it is), so that one character stays one token.

    Example:

    >>> model_text("Zitra v Brne")
    'zitra v brne'
    """
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in stripped)


def char_ids(tokenizer, text):
    """One token id per character of `text` (its length, always): a
    character that `tokenizer` reads as several tokens or none is its first
    token or the unknown id.

    Args:
        tokenizer: a `CharTokenizer`.
        text: str.

    Returns:
        list of int.
    """
    ids = tokenizer.encode(text)
    if len(ids) != len(text):  # a character the tokenizer reads as several
        ids = [(tokenizer.encode(c) or [tokenizer.unk_id])[0] for c in text]
    return ids


def text_windows(text, width):
    """`(start, end)` spans that cut a text into pieces of at most `width`
    characters, at spaces where one is near (a word longer than the width is
    cut inside).

    Args:
        text: str.
        width: int, the most characters a piece.

    Returns:
        list of `(start, end)` covering the text in order, without gaps.

    Example:

    >>> text_windows("ab cd ef", 5)
    [(0, 3), (3, 8)]
    """
    spans, start = [], 0
    while len(text) - start > width:
        end = text.rfind(" ", start + 1, start + width) + 1
        if end <= start + width // 2:  # no space in the second half: cut there
            end = start + width
        spans.append((start, end))
        start = end
    if start < len(text) or not spans:
        spans.append((start, len(text)))
    return spans
