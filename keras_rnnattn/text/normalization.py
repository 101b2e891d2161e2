"""Text normalisation, word splitting and detokenisation for German and English."""

import re
import unicodedata

# A number with inner separators ("3.5", "1,000", "10:30"); a word with inner
# hyphens ("A-Dur", "well-known"), a German hyphen of an elided word part before
# a space ("Feuerwehr- und") or after one ("und -motivation"); or any single
# other non-space character.
_TOKEN_RE = re.compile(
    r"\d+(?:[.,:]\d+)+"
    r"|(?:(?<!\S)-)?\w+(?:-\w+)*(?:-(?!\S))?"
    r"|[^\w\s]"
)
APOSTROPHES = ("'", "’")

# Tokens written without a space before them, and tokens without a space after.
_ATTACH_LEFT = frozenset(".,!?;:)]}>%…»”’")
_ATTACH_RIGHT = frozenset("([{<¿¡«„‘")
_ATTACH_BOTH = frozenset("/")


def normalize(text, lowercase=False):
    """Returns `text` in Unicode NFC, lowercased when asked.

    Umlauts and ß are kept (`str.lower`, not `casefold`, which turns ß into ss).

    Args:
        text: str.
        lowercase: bool, whether to lowercase.

    Returns:
        The normalised str.

    Example:

    >>> normalize("Straße", lowercase=True)
    'straße'
    """
    if not isinstance(text, str):
        raise ValueError(
            f"Expected a str, got {type(text).__name__}. Received: text={text!r}"
        )
    text = unicodedata.normalize("NFC", text)
    return text.lower() if lowercase else text


def fold_letters(text, known):
    """Spells `text` with the characters of `known`, folding the others to their
    base letters (Unicode NFKD without the accents, then case folding).

    `café` becomes `cafe`, `naïve` `naive`, `straße` `strasse` (`casefold`,
    as German writes ß without it): what a model trained on unaccented letters
    (the `cmudict_g2p` preset) can read. A character that folds to none of
    `known` (an emoji, another script) cannot be spelled: the result is None.

    Args:
        text: str.
        known: a container of str (a `Vocabulary`, a set of characters).

    Returns:
        The folded str, or None when some character has no spelling in `known`.

    Example:

    >>> letters = set("abcdefghijklmnopqrstuvwxyz")
    >>> [fold_letters(w, letters) for w in ["café", "straße", "naïve", "ok😀"]]
    ['cafe', 'strasse', 'naive', None]
    """
    out = []
    for char in text:
        if char in known:
            out.append(char)
            continue
        base = "".join(
            c
            for c in unicodedata.normalize("NFKD", char)
            if not unicodedata.combining(c)
        )
        for spelling in (base, char.casefold(), base.casefold()):
            if spelling and all(c in known for c in spelling):
                out.append(spelling)
                break
        else:
            return None
    return "".join(out)


def split_words(text):
    """Splits normalised text into words, numbers and punctuation marks.

    Punctuation becomes a token of its own ("normal." -> "normal", "."), hyphens
    inside words and separators inside numbers stay ("A-Dur", "3.5"), so do
    German hyphens of elided word parts ("Feuerwehr-", "-motivation"), and an
    apostrophe between two words starts a clitic token that `detokenize` joins
    back to the word before it ("Shakespeare’s" -> "Shakespeare", "’s").

    Args:
        text: str, already normalised.

    Returns:
        list of str.

    Example:

    >>> split_words("Das Kind entwickelt sich normal.")
    ['Das', 'Kind', 'entwickelt', 'sich', 'normal', '.']
    """
    matches = list(_TOKEN_RE.finditer(text))
    tokens = []
    i = 0
    while i < len(matches):
        match = matches[i]
        token = match.group()
        if (
            token in APOSTROPHES
            and i > 0
            and i + 1 < len(matches)
            and matches[i - 1].end() == match.start()
            and matches[i - 1].group()[-1].isalnum()
            and matches[i + 1].start() == match.end()
            and matches[i + 1].group()[0].isalnum()
        ):
            tokens.append(token + matches[i + 1].group())
            i += 2
            continue
        tokens.append(token)
        i += 1
    return tokens


def _is_clitic(token):
    return len(token) > 1 and token[0] in APOSTROPHES


def detokenize(tokens):
    """Joins word tokens back into natural text.

    No space before . , ! ? ; : ) ] } > % … and closing quotes, none after
    opening brackets and quotes, none around "/"; clitics ("’s") join the word
    before them; straight quotes " and ' alternate between opening and
    closing; “ closes a German „ and otherwise opens an English quotation.
    Text made by `split_words` splits into the same tokens again; what is not
    restored: dotted abbreviations ("i.e." comes back as "i. e."), an elision
    apostrophe after a space ("mit ’ner" comes back as "mit’ ner"), spacing
    that breaks these rules ("10 %" comes back as "10%").

    Args:
        tokens: iterable of str, as made by `split_words`.

    Returns:
        str.

    Example:

    >>> detokenize(["Das", "Kind", "entwickelt", "sich", "normal", "."])
    'Das Kind entwickelt sich normal.'
    """
    pieces = []
    no_space_next = True
    space_next = False
    open_straight = {'"': False, "'": False}
    german_quote_open = False
    for token in tokens:
        if token == "":
            continue
        if token in open_straight:
            closing = open_straight[token]
            open_straight[token] = not closing
            left, right = closing, not closing
        elif token == "“":
            left, right = german_quote_open, not german_quote_open
            german_quote_open = False
        elif token == "„":
            german_quote_open = True
            left, right = False, True
        elif _is_clitic(token) or token in _ATTACH_LEFT:
            left, right = True, False
        elif token in _ATTACH_RIGHT:
            left, right = False, True
        elif token in _ATTACH_BOTH:
            left, right = True, True
        else:
            left, right = False, False
        # A German elision hyphen keeps its space: "und -motivation", "Feuerwehr- und".
        elided_before = len(token) > 1 and token[0] == "-"
        if pieces and (space_next or elided_before or not (left or no_space_next)):
            pieces.append(" ")
        pieces.append(token)
        no_space_next = right
        space_next = len(token) > 1 and token[-1] == "-"
    return "".join(pieces)
