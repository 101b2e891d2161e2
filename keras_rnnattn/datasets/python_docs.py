"""The prose of Python's documentation (PSF licence) as documents of running text."""

import re
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source

# The parts of the documentation written as prose (the library reference is
# mostly signatures and code).
PROSE_FOLDERS = (
    "tutorial",
    "howto",
    "faq",
    "using",
    "installing",
    "extending",
    "reference",
)
PARAGRAPHS_PER_DOCUMENT = 10

_ROLE_RE = re.compile(r":[\w:+-]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK_RE = re.compile(r"`([^`<]+?)\s*<[^>]*>`__?")
_LITERAL_RE = re.compile(r"``([^`]+)``")
_EMPHASIS_RE = re.compile(r"\*\*?([^*\s][^*]*?)\*\*?")
_REFERENCE_RE = re.compile(r"`([^`]+)`_*|\|([^|\s]+)\|_*|\[#?\w*\]_")
_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")


def _inline(text):
    """reST inline markup replaced by its text."""
    text = _ROLE_RE.sub(
        lambda m: m.group(1).split(".")[-1] if "~" in m.group(0) else m.group(1), text
    )
    text = _LINK_RE.sub(r"\1", text)
    text = _LITERAL_RE.sub(r"\1", text)
    text = _EMPHASIS_RE.sub(r"\1", text)
    text = _REFERENCE_RE.sub(lambda m: m.group(1) or m.group(2) or "", text)
    return " ".join(text.replace("\\", "").split())


def parse_rest_prose(markup, min_words=5):
    """The prose paragraphs of a reST file, inline markup removed.

    A paragraph is a run of non-blank lines starting at column 0. Dropped:
    directives and comments (`..`), what is indented under them or after a
    `::` (code), section titles, tables, list items, and paragraphs that
    do not start with a capital letter, end with `.`, `?`, `!` or `:`, or
    have fewer than `min_words` words; section titles that are questions
    (the FAQ's) are kept. A paragraph ending in `::` ends with `:`.

    Args:
        markup: str, the reST source.
        min_words: int.

    Returns:
        list of str.

    Example:

    >>> parse_rest_prose("Title\\n=====\\n\\nUse the :func:`len` function\\n"
    ...                  "to count ``items``. For example::\\n\\n   len(x)\\n")
    ['Use the len function to count items. For example:']
    """
    paragraphs, block = [], []
    for line in markup.splitlines() + [""]:
        if line.strip() and not line[:1].isspace():
            block.append(line.rstrip())
            continue
        if block:
            paragraphs.append(block)
            block = []
    out = []
    for lines in paragraphs:
        first = lines[0]
        if first.startswith((".. ", "..\t", "+", "|", "* ", "- ", "#. ", ">>>")):
            continue
        if len(lines) == 2 and _UNDERLINE_RE.match(lines[1]) and first.endswith("?"):
            lines = lines[:1]  # a question as a section title (the FAQ)
        if re.match(r"^\d+\.\s", first) or any(_UNDERLINE_RE.match(x) for x in lines):
            continue
        text = " ".join(lines)
        if text.endswith("::"):
            text = text[:-1]
        text = _inline(text)
        if not text or not text[0].isupper() or text[-1] not in ".?!:":
            continue
        if len(text.split()) >= min_words and "`" not in text:
            out.append(text)
    return out


def _parse(root):
    rows, seen = [], set()
    for folder in PROSE_FOLDERS:
        for path in sorted((root / folder).rglob("*.rst.txt")):
            for text in parse_rest_prose(path.read_text(encoding="utf-8")):
                if text not in seen:  # a shared paragraph: its first file only
                    seen.add(text)
                    rows.append((str(path.relative_to(root)), text))
    return rows


def load_python_docs(split="train", path=None):
    """The prose of Python 3.11's tutorial, HOWTOs, FAQ and guides, by document.

    Read from Debian's `python3.11-doc` (`_sources`, reST; PSF licence) with
    `parse_rest_prose`: the tutorial, HOWTOs, FAQ, guides and language
    reference, 3,675 paragraphs (134,228 words) of technical documentation with
    questions (the FAQ's titles). A document is 10 consecutive paragraphs
    of a file, joined by newlines, keyed `<path>#<k>` for `split_documents`
    (the path relative to `_sources`).

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of `_sources`. By default
            `/usr/share/doc/python3.11/html/_sources`, then
            `cache_dir()/python3.11-doc/...` (`fetch("python_docs")`).

    Returns:
        list of str, one per document.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> docs = load_python_docs("test")  # doctest: +SKIP
    """
    root = Path(find_source("python_docs", path))
    files = [root / folder for folder in PROSE_FOLDERS if (root / folder).exists()]
    rows = cached_rows("python_docs", files, lambda: _parse(root))
    by_file = {}
    for key, text in rows:
        by_file.setdefault(key, []).append(text)
    keyed = []
    for key, texts in by_file.items():
        for k in range(0, len(texts), PARAGRAPHS_PER_DOCUMENT):
            part = texts[k : k + PARAGRAPHS_PER_DOCUMENT]
            keyed.append((f"{key}#{k // PARAGRAPHS_PER_DOCUMENT}", "\n".join(part)))
    return split_documents(keyed, split)
