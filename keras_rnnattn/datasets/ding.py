"""German-English sentence pairs from the example sentences of the Ding dictionary."""

import re

from keras_rnnattn.datasets.sources import cached_rows, find_source
from keras_rnnattn.datasets.splits import check_split, split_indices

# "{f}", "[ugs.]", "(zoologische Familie)" with the white space before them.
_ANNOTATION_RE = re.compile(r"\s*(?:\{[^}]*\}|\[[^\]]*\]|\([^)]*\))")
_FORBIDDEN = ("sth.", "sb.", "etw.", "jdm.", "jdn.", "jds.", "/", "…", "...")
# One word written with alternatives ("Darf/Dürfte", "reach/go."): the first
# alternative, then the punctuation after the last one. Later alternatives have
# two letters or more and no digits (not units such as "km/h", nor "24/7").
_ALTERNATIVES_RE = re.compile(
    r"^([^\W\d_][\w’'-]*)(?:/[^\W\d_][^\W\d_’'-][\w’'-]*)+([.,!?:;]*)$"
)
N_TEST = 1000
N_VALIDATION = 500


def _clean(text):
    return " ".join(_ANNOTATION_RE.sub("", text).split())


def _aligned_parts(lines):
    """`(german, english)` parts of each entry line, paired in order by `|`.

    Skips comments, lines without `::` and lines whose sides have unequal
    numbers of parts.
    """
    for line in lines:
        line = line.rstrip("\r\n")
        if line.startswith("#") or "::" not in line:
            continue
        german, english = line.split("::", 1)
        german_parts, english_parts = german.split("|"), english.split("|")
        if len(german_parts) == len(english_parts):
            yield from zip(german_parts, english_parts)


def parse_ding(lines):
    """Extracts sentence pairs from lines of the Ding dictionary (`de :: en`).

    The canonical recipe: skip lines starting with `#` or without `::`; split
    at the first `::`; split both sides on `|` and pair the parts in order
    when both sides have as many parts; drop pairs whose English part holds
    `;`; remove `{…}`, `[…]`, `(…)` annotations with the white space before
    them and squeeze white space; keep a pair when the English starts with
    A-Z and ends with `.`, `?` or `!`, neither side holds `sth.`, `sb.`,
    `etw.`, `jdm.`, `jdn.`, `jds.`, `/`, `…` or `...`, the English has 3 to 20
    words, and the English was not seen before.

    Args:
        lines: iterable of str, the lines of `usr/share/trans/de-en`.

    Returns:
        list of `(german, english)` tuples, in file order.

    Example:

    >>> parse_ding(["Hund {m} | Der Hund bellt. :: dog | The dog barks."])
    [('Der Hund bellt.', 'The dog barks.')]
    """
    pairs = []
    seen = set()
    for de, en in _aligned_parts(lines):
        if ";" in en:
            continue
        de, en = _clean(de), _clean(en)
        if not en or not "A" <= en[0] <= "Z" or en[-1] not in ".?!":
            continue
        if any(bad in de or bad in en for bad in _FORBIDDEN):
            continue
        if not 3 <= len(en.split()) <= 20 or en in seen:
            continue
        seen.add(en)
        pairs.append((de, en))
    return pairs


def load_ding_de_en(split="train", path=None):
    """German-English sentence pairs from the Ding dictionary (Debian `trans-de-en`).

    16,570 natural short sentence pairs (median 7 English words) extracted by
    the canonical recipe of `parse_ding` from Debian bookworm's trans-de-en
    1.9-6, split with `numpy.random.default_rng(1234).permutation`: test is the
    first 1000, validation the next 500, train the other 15,070, each in
    permutation order; `"all"` is every pair in file order. The dictionary is
    GPL-2+: it is read from its package, never shipped. Parsed pairs are cached
    as TSV in `cache_dir()`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the `de-en` file. By default
            `/usr/share/trans/de-en`, then `cache_dir()/trans-de-en/...`
            (see `fetch("ding_de_en")`).

    Returns:
        list of `(german, english)` tuples of str.

    Raises:
        DatasetNotFoundError: the dictionary is not installed; the message says
            `apt-get install trans-de-en`.

    Example:

    >>> pairs = load_ding_de_en("test")  # doctest: +SKIP
    >>> pairs[0]  # doctest: +SKIP
    ('Der Film folgt genau der Shakespear’schen Handlung.', 'The film faithfully follows Shakespeare’s plot.')
    """
    check_split(split)
    source = find_source("ding_de_en", path)

    def parse():
        with open(source, encoding="utf-8") as f:
            return parse_ding(f)

    pairs = cached_rows("ding_de_en", [source], parse)
    index = split_indices(len(pairs), split, N_TEST, N_VALIDATION)
    return [tuple(pairs[i]) for i in index]


def parse_ding_lexicon(lines, exclude=()):
    """Extracts every other German-English pair of the Ding dictionary.

    The dictionary's words, phrases and the example sentences that the
    canonical recipe of `parse_ding` leaves out: for each line, both sides
    split on `|` and paired in order (as in `parse_ding`); each part split on
    `;` into synonyms, paired in order when both sides have as many, else
    only the first of each; annotations removed as in `parse_ding`. A pair is
    dropped when either side is empty, holds a placeholder (`sth.`, `jdn.`,
    ...), `/`, `…` or `...`, the English has more than 30 words, or either
    side equals a side of a pair in `exclude`. Each pair is kept once.

    Args:
        lines: iterable of str, the lines of `usr/share/trans/de-en`.
        exclude: iterable of `(german, english)` pairs whose sides must not
            occur (the canonical sentence pairs).

    Returns:
        list of `(german, english)` tuples, in file order.

    Example:

    >>> parse_ding_lexicon(
    ...     ["Hund {m}; Köter {m} | Der Hund bellt. :: dog; cur | The dog barks."],
    ...     exclude=[("Der Hund bellt.", "The dog barks.")],
    ... )
    [('Hund', 'dog'), ('Köter', 'cur')]
    """
    excluded_de, excluded_en = set(), set()
    for de, en in exclude:
        excluded_de.add(de)
        excluded_en.add(en)
    pairs = []
    seen = set()
    for de_part, en_part in _aligned_parts(lines):
        de_words = [_clean(x) for x in de_part.split(";")]
        en_words = [_clean(x) for x in en_part.split(";")]
        if len(de_words) != len(en_words):
            de_words, en_words = de_words[:1], en_words[:1]
        for de, en in zip(de_words, en_words):
            if not de or not en or len(en.split()) > 30:
                continue
            if any(bad in de or bad in en for bad in _FORBIDDEN):
                continue
            if de in excluded_de or en in excluded_en or (de, en) in seen:
                continue
            seen.add((de, en))
            pairs.append((de, en))
    return pairs


def load_ding_de_en_lexicon(path=None):
    """Every German-English pair of the Ding dictionary outside its sentences.

    About 366,000 pairs from Debian bookworm's trans-de-en 1.9-6: single words
    and phrases (most have one or two words) and the example sentences that
    the canonical extraction leaves out, by `parse_ding_lexicon`. No side of
    any pair equals a side of a canonical sentence pair (`load_ding_de_en("all")`),
    so nothing of the validation and test splits leaks into training. For
    training beside `load_ding_de_en("train")`. Cached as TSV in `cache_dir()`.

    Args:
        path: optional path of the `de-en` file, as in `load_ding_de_en`.

    Returns:
        list of `(german, english)` tuples of str, in file order.

    Raises:
        DatasetNotFoundError: the dictionary is not installed; the message says
            `apt-get install trans-de-en`.

    Example:

    >>> lexicon = load_ding_de_en_lexicon()  # doctest: +SKIP
    >>> len(lexicon)  # doctest: +SKIP
    366362
    """
    return _load_beside_sentences("ding_de_en_lexicon", parse_ding_lexicon, path)


def _load_beside_sentences(cache_name, parse_lines, path=None):
    """`parse_lines(lines, exclude=canonical pairs)` of the dictionary, cached."""
    source = find_source("ding_de_en", path)
    sentences = load_ding_de_en("all", path=path)

    def parse():
        with open(source, encoding="utf-8") as f:
            return parse_lines(f, exclude=sentences)

    return [tuple(p) for p in cached_rows(cache_name, [source], parse)]


def _first_alternatives(text):
    """`text` with each `a/b` word replaced by `a`; None if a `/` is not
    between two words (spaced alternatives, whose scope is unclear)."""
    words = []
    for word in text.split():
        if "/" in word:
            match = _ALTERNATIVES_RE.match(word)
            if match is None:
                return None
            word = match.group(1) + match.group(2)
        words.append(word)
    return " ".join(words)


def parse_ding_alternatives(lines, exclude=()):
    """Extracts the example sentences that the dictionary writes with `/` alternatives.

    The pairs `parse_ding` drops only for a `/`: aligned and cleaned as there,
    English starting with A-Z, ending with `.`, `?` or `!`, 3 to 20 words, no
    `;` in the English, no placeholder (`sth.`, `jdn.`, ...), `…` or `...`.
    Every word written `a/b` (or `a/b/c`) becomes its first alternative on
    both sides ("Darf/Dürfte ich kurz stören?" → "Darf ich kurz stören?");
    a pair with a `/` anywhere else (spaced alternatives such as
    "by now / by this time", or "24/7") is dropped. A pair is also dropped
    when either side equals a side of a pair in `exclude`; each is kept once.

    Args:
        lines: iterable of str, the lines of `usr/share/trans/de-en`.
        exclude: iterable of `(german, english)` pairs whose sides must not
            occur (the canonical sentence pairs).

    Returns:
        list of `(german, english)` tuples, in file order.

    Example:

    >>> parse_ding_alternatives(["Darf/Dürfte ich? | Er kam. :: May/Can I go? | He came."])
    [('Darf ich?', 'May I go?')]
    """
    excluded_de = {de for de, _ in exclude}
    excluded_en = {en for _, en in exclude}
    pairs = []
    seen = set()
    for de, en in _aligned_parts(lines):
        if ";" in en:
            continue
        de, en = _clean(de), _clean(en)
        if "/" not in de + en:
            continue
        de, en = _first_alternatives(de), _first_alternatives(en)
        if not de or not en or not "A" <= en[0] <= "Z" or en[-1] not in ".?!":
            continue
        if any(bad in de or bad in en for bad in _FORBIDDEN):
            continue
        if not 3 <= len(en.split()) <= 20 or (de, en) in seen:
            continue
        if de in excluded_de or en in excluded_en:
            continue
        seen.add((de, en))
        pairs.append((de, en))
    return pairs


def load_ding_de_en_alternatives(path=None):
    """The Ding example sentences written with `/` alternatives, first alternative kept.

    1,390 sentence pairs of Debian bookworm's trans-de-en 1.9-6 that the
    canonical extraction leaves out only because they offer alternative words
    ("Er hatte Geld gebunkert/versteckt."), by `parse_ding_alternatives`. No
    side of any pair equals a side of a canonical sentence pair
    (`load_ding_de_en("all")`), so nothing of the validation and test splits
    leaks into training. More in-domain sentences for training beside
    `load_ding_de_en("train")`. Cached as TSV in `cache_dir()`.

    Args:
        path: optional path of the `de-en` file, as in `load_ding_de_en`.

    Returns:
        list of `(german, english)` tuples of str, in file order.

    Raises:
        DatasetNotFoundError: the dictionary is not installed; the message says
            `apt-get install trans-de-en`.

    Example:

    >>> pairs = load_ding_de_en_alternatives()  # doctest: +SKIP
    >>> len(pairs)  # doctest: +SKIP
    1390
    """
    return _load_beside_sentences(
        "ding_de_en_alternatives", parse_ding_alternatives, path
    )
