"""German-English paragraph pairs of the LibreOffice help (MPL-2.0)."""

import html
import re
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source
from keras_rnnattn.datasets.splits import check_split, split_indices

N_TEST = 1000
N_VALIDATION = 500

_PARAGRAPH_RE = re.compile(
    r'<(p|h[1-6]|td)\b[^>]*\bid="((?:par|hd)_id[^"]*)"[^>]*>(.*?)</\1>', re.S
)
_TAG_RE = re.compile(r"<[^>]*>")
_SPACE_BEFORE_RE = re.compile(r" ([,.;:?!)\]])")
_PLACEHOLDER_RE = re.compile(r"[$%]\[|\{|\}|\\|https?:|\.(html|xhp)\b|[<>]")


def parse_help_paragraphs(markup):
    """The paragraphs of one help page: `{paragraph id: plain text}`.

    Paragraphs are the `<p>`, heading and table-cell elements whose `id` starts
    with `par_id` or `hd_id`; tags inside them are dropped, entities unescaped
    and white space collapsed. Empty paragraphs are left out.

    Args:
        markup: str, the HTML of one page.

    Returns:
        dict of str to str.

    Example:

    >>> parse_help_paragraphs('<p id="par_id1" class="x">Click <b>OK</b>.</p>')
    {'par_id1': 'Click OK.'}
    """
    out = {}
    for _, key, inner in _PARAGRAPH_RE.findall(markup):
        text = " ".join(html.unescape(_TAG_RE.sub(" ", inner)).split())
        text = _SPACE_BEFORE_RE.sub(r"\1", text)
        if text:
            out.setdefault(key, text)
    return out


def parse_libreoffice_help(german_root, english_root, min_words=3, max_words=25):
    """Aligns the German and English help pages paragraph by paragraph.

    A pair is the German and English text of the same paragraph id in the same
    page (relative path). Kept: both sides of `min_words` to `max_words` words,
    the English side starting with a capital letter and ending in `.`, `?`,
    `!` or `:`, sides that differ (untranslated paragraphs are dropped), no
    placeholders, markup or links; each English side once (first in path
    order).

    Args:
        german_root: path of `help/de`.
        english_root: path of `help/en-US`.
        min_words: int.
        max_words: int.

    Returns:
        list of `(german, english)` tuples of str, in path and page order.
    """
    german_root, english_root = Path(german_root), Path(english_root)
    pairs, seen = [], set()
    for de_file in sorted(german_root.rglob("*.html")):
        en_file = english_root / de_file.relative_to(german_root)
        if not en_file.exists():
            continue
        de_pars = parse_help_paragraphs(de_file.read_text(encoding="utf-8"))
        en_pars = parse_help_paragraphs(en_file.read_text(encoding="utf-8"))
        for key, en in en_pars.items():
            de = de_pars.get(key)
            if de is None or de == en or en in seen:
                continue
            if not ("A" <= en[0] <= "Z" and en[-1] in ".?!:"):
                continue
            if not all(min_words <= len(s.split()) <= max_words for s in (de, en)):
                continue
            if _PLACEHOLDER_RE.search(de) or _PLACEHOLDER_RE.search(en):
                continue
            seen.add(en)
            pairs.append((de, en))
    return pairs


def load_libreoffice_help_de_en(split="train", german_path=None, english_path=None):
    """German-English sentence pairs from the LibreOffice help (Debian packages).

    Paragraphs of `libreoffice-help-de` and `libreoffice-help-en-us`
    (bookworm 7.4.7) aligned by page and paragraph id, filtered by
    `parse_libreoffice_help` (3 to 25 words a side, sentence-like English):
    technical prose about office software, out of domain for the Ding
    sentences, used as extra translation data. Split with
    `numpy.random.default_rng(1234).permutation`: test the first 1000,
    validation the next 500, train the rest; `"all"` in path order. The help
    is MPL-2.0; it is read from the packages, never shipped. Parsed pairs are
    cached as TSV in `cache_dir()`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        german_path: optional path of `help/de`. By default
            `/usr/share/libreoffice/help/de`, then
            `cache_dir()/libreoffice-help-de/...` (`fetch("libreoffice_help_de")`).
        english_path: the same for `help/en-US` (`libreoffice-help-en-us`).

    Returns:
        list of `(german, english)` tuples of str.

    Raises:
        DatasetNotFoundError: a help package is missing; the message names the
            command that installs it.

    Example:

    >>> pairs = load_libreoffice_help_de_en("train")  # doctest: +SKIP
    >>> len(pairs)  # doctest: +SKIP
    18640
    """
    check_split(split)
    german = find_source("libreoffice_help_de", german_path)
    english = find_source("libreoffice_help_en", english_path)

    def parse():
        return parse_libreoffice_help(german, english)

    files = [german, english]
    pairs = cached_rows("libreoffice_help_de_en", files, parse)
    index = split_indices(len(pairs), split, N_TEST, N_VALIDATION)
    return [tuple(pairs[i]) for i in index]


def parse_help_prose(english_root, min_words=3, is_capital=None):
    """The sentence-like paragraphs of each English help page, in path order.

    A paragraph that several pages share is kept on the first page only, so
    that no held-out page repeats a training page.

    Args:
        english_root: path of `help/en-US` (or another language's folder).
        min_words: int.
        is_capital: optional function of a character, whether it starts a
            sentence (default: an ASCII capital; `str.isupper` for any
            alphabet).

    Returns:
        list of `(page, paragraph)` pairs of str; `page` is the path relative
        to `english_root`.

    Example:

    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "a.html").write_text('<p id="par_id1">Click OK to close it.</p>')
    >>> _ = (root / "b.html").write_text('<p id="par_id1">Click OK to close it.</p>')
    >>> parse_help_prose(root)
    [('a.html', 'Click OK to close it.')]
    """
    english_root = Path(english_root)
    is_capital = is_capital or (lambda char: "A" <= char <= "Z")
    rows, seen = [], set()
    for page in sorted(english_root.rglob("*.html")):
        for text in parse_help_paragraphs(page.read_text(encoding="utf-8")).values():
            if text in seen or not (is_capital(text[0]) and text[-1] in ".?!:"):
                continue
            if len(text.split()) >= min_words and not _PLACEHOLDER_RE.search(text):
                seen.add(text)
                rows.append((str(page.relative_to(english_root)), text))
    return rows


def load_libreoffice_help_en(split="train", path=None):
    """The English LibreOffice help as documents: instructions and explanations.

    The sentence-like paragraphs of each page of `libreoffice-help-en-us`
    (MPL-2.0; `parse_help_prose`), joined by newlines, one document per
    page; split by page with `split_documents`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of `help/en-US`. By default
            `/usr/share/libreoffice/help/en-US`, then
            `cache_dir()/libreoffice-help-en-us/...`
            (`fetch("libreoffice_help_en")`).

    Returns:
        list of str, one per page.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> pages = load_libreoffice_help_en("test")  # doctest: +SKIP
    """
    return help_pages("libreoffice_help_en", split, path)


def help_pages(name, split, path=None, is_capital=None):
    """The pages of one language's help as documents of one split.

    Args:
        name: the corpus name (`"libreoffice_help_en"`, `"libreoffice_help_cs"`).
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the language's help folder.
        is_capital: `parse_help_prose`'s sentence-start test.

    Returns:
        list of str, one per page: its paragraphs joined by newlines.
    """
    root = find_source(name, path)
    rows = cached_rows(
        name, [root], lambda: parse_help_prose(root, is_capital=is_capital)
    )
    pages = {}
    for page, text in rows:
        pages.setdefault(page, []).append(text)
    return split_documents([(p, "\n".join(t)) for p, t in pages.items()], split)
