"""Punctuation and capitalisation as one tag per word, and back (Tilk & Alumäe 2016).

Speech recognisers emit lowercase words without punctuation; a tagger that
gives each word the punctuation mark that follows it, and its case, restores
readable text. The punctuation classes are Tilk and Alumäe's (2016):

- `COMMA`: commas, colons and dashes;
- `PERIOD`: full stops, exclamation marks and semicolons;
- `QUESTION`: question marks;
- `O`: none.

Where several marks follow a word the strongest counts (QUESTION, then
PERIOD, then COMMA); quotes and brackets are dropped. The case is `lower`,
`title` (first letter capitalised: "Paris", "I") or `upper` (more than one
letter, all capitals: "NASA"). A word's tag is `<case>_<punctuation>`, one of
the 12 `PUNCTUATION_TAGS`.
"""

import unicodedata

from keras_rnnattn.text.normalization import detokenize, normalize, split_words

PUNCTUATION_CLASSES = ("O", "COMMA", "PERIOD", "QUESTION")
CASES = ("lower", "title", "upper")
PUNCTUATION_TAGS = tuple(f"{c}_{p}" for c in CASES for p in PUNCTUATION_CLASSES)
_MARK_CLASS = {
    ",": "COMMA", ":": "COMMA", "-": "COMMA", "–": "COMMA", "—": "COMMA",
    ".": "PERIOD", "!": "PERIOD", ";": "PERIOD", "…": "PERIOD",
    "?": "QUESTION",
}  # fmt: skip
_MARK_OF_CLASS = {"COMMA": ",", "PERIOD": ".", "QUESTION": "?"}


def _is_word(token):
    return any(ch.isalnum() for ch in token)


def _case(word):
    letters = [ch for ch in word if ch.isalpha()]
    if not letters or not letters[0].isupper():
        return "lower"
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return "upper"
    return "title"


def _mark_class(token):
    """The strongest punctuation class of the marks in a non-word token."""
    classes = [_MARK_CLASS[ch] for ch in token if ch in _MARK_CLASS]
    if not classes:
        return "O"
    return max(classes, key=PUNCTUATION_CLASSES.index)


def strip_punctuation(text):
    """The words of `text`, lowercased, without punctuation: what ASR emits.

    Args:
        text: str.

    Returns:
        str, the words joined by single spaces.

    Example:

    >>> strip_punctuation("Hello, Mr. Smith! Isn't it late?")
    "hello mr smith isn't it late"
    """
    return detokenize([w.lower() for w in split_words(normalize(text)) if _is_word(w)])


def untagged_tokens(text):
    """The tokens of `text` a punctuation tagger does not read, and where they are.

    `strip_punctuation` keeps the words only; an emoji or a symbol (`🍕`, `€`)
    is neither a word nor a punctuation mark that the tags restore. This gives
    those tokens with their place, so that `restore_punctuation` puts them back.

    Args:
        text: str.

    Returns:
        list of `(position, token)`: the number of words of
        `strip_punctuation(text)` before the token, and the token.

    Example:

    >>> untagged_tokens("i love 🍕, and café 😀")
    [(2, '🍕'), (4, '😀')]
    """
    others, position = [], 0
    for token in split_words(normalize(text)):
        if _is_word(token):
            position += 1
        elif not all(unicodedata.category(ch)[0] == "P" for ch in token):
            others.append((position, token))
    return others


def punctuation_tags(text):
    """The words of `text` (lowercased) and the tag of each.

    Args:
        text: str, punctuated and cased running text.

    Returns:
        `(words, tags)`: two lists of str of the same length; `words` are the
        word tokens of `keras_rnnattn.text.split_words` (so "isn't" is
        `["isn", "'t"]`), lowercased; `tags` are `PUNCTUATION_TAGS`.

    Example:

    >>> punctuation_tags("Hello, NASA! Why?")
    (['hello', 'nasa', 'why'], ['title_COMMA', 'upper_PERIOD', 'title_QUESTION'])
    """
    words, cases, marks = [], [], []
    for token in split_words(normalize(text)):
        if _is_word(token):
            words.append(token.lower())
            cases.append(_case(token))
            marks.append("O")
        elif words:
            mark = _mark_class(token)
            if PUNCTUATION_CLASSES.index(mark) > PUNCTUATION_CLASSES.index(marks[-1]):
                marks[-1] = mark
    return words, [f"{c}_{m}" for c, m in zip(cases, marks)]


def restore_punctuation(words, tags, others=()):
    """Text from words and their tags: the inverse of `punctuation_tags`.

    Args:
        words: list of str, lowercase word tokens.
        tags: list of str, one of `PUNCTUATION_TAGS` per word.
        others: list of `(position, token)`, tokens put back untagged after
            the first `position` words and their marks (those after the last
            word before its mark, which ends the text), as `untagged_tokens`
            gives them.

    Returns:
        str, the words cased and punctuated, detokenized.

    Example:

    >>> restore_punctuation(["hello", "nasa", "why"],
    ...                     ["title_COMMA", "upper_PERIOD", "title_QUESTION"])
    'Hello, NASA. Why?'
    >>> restore_punctuation(["i", "love", "it"], ["title_O", "lower_O", "lower_PERIOD"],
    ...                     others=[(2, "🍕"), (3, "😀")])
    'I love 🍕 it 😀.'
    """
    if len(words) != len(tags):
        raise ValueError(
            f"Give one tag per word. Received: {len(words)} words and {len(tags)} tags"
        )
    tokens = []
    others = sorted(others, key=lambda item: item[0])
    placed = 0  # the first of `others` not yet placed

    def place(up_to):  # the others with at most `up_to` words before them
        nonlocal placed
        while placed < len(others) and others[placed][0] <= up_to:
            tokens.append(others[placed][1])
            placed += 1

    for i, (word, tag) in enumerate(zip(words, tags)):
        place(i)
        if tag not in PUNCTUATION_TAGS:
            raise ValueError(
                f"Each tag must be one of {PUNCTUATION_TAGS}. Received: tag={tag!r}"
            )
        case, mark = tag.split("_")
        if case == "upper":
            word = word.upper()
        elif case == "title":
            word = word[:1].upper() + word[1:]
        tokens.append(word)
        if i + 1 == len(words):
            place(float("inf"))  # the text's end: before its last mark
        if mark != "O":
            tokens.append(_MARK_OF_CLASS[mark])
    place(float("inf"))  # no words: every other token
    return detokenize(tokens)


def _boundary(words, i):
    """`i`, moved back so that a window does not start with a clitic ("’s")."""
    while 0 < i < len(words) and words[i][:1] in "'’":
        i -= 1
    return i


def punctuation_windows(words, tags, length, stride=None):
    """Windows of running text for a punctuation tagger: its texts and their tags.

    Running text is too long to tag at once; a tagger trains and is scored on
    windows of consecutive words. A window never starts inside a word ("isn"
    and "’t" stay together), and its words are joined with `detokenize`, so
    that a tokenizer splits each text back into the same words.

    Args:
        words: list of str, the words of `punctuation_tags`.
        tags: list of str, their tags.
        length: int, the most words in a window (at least 2).
        stride: optional int, a window starts every `stride` words; the
            default, `length`, covers each word exactly once.

    Returns:
        `(texts, tag_lists)`: a list of str and a list of lists of tags.

    Example:

    >>> words, tags = punctuation_tags("It’s late. Where is he?")
    >>> punctuation_windows(words, tags, 2)[0]
    ['it’s', 'late where', 'is he']
    """
    if length < 2:
        raise ValueError(f"`length` must be at least 2. Received: length={length}")
    if len(words) != len(tags):
        raise ValueError(
            f"Give one tag per word. Received: {len(words)} words and {len(tags)} tags"
        )
    stride = min(stride or length, length)
    chosen, a = [], 0
    while a < len(words):
        end = min(a + length, len(words))
        b = _boundary(words, end) if _boundary(words, end) > a else end
        chosen.append((a, b))
        following = b if stride == length else _boundary(words, a + stride)
        a = following if following > a else a + stride
    return (
        [detokenize(words[a:b]) for a, b in chosen],
        [list(tags[a:b]) for a, b in chosen],
    )
