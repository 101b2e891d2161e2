"""Czech text with diacritics from Debian's packages: fortune cookies and help.

- `fortunes-cs` (GPL): sayings, jokes, quotations and short dialogue, the
  everyday Czech of the corpus;
- `libreoffice-help-cs` (MPL-2.0): the LibreOffice help pages, instructions
  and explanations.

Each is split by document with `split_documents` (a cookie, a help page), so
held-out text never shares a document with training text.
"""

import re
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.fortunes import parse_fortune_files
from keras_rnnattn.datasets.libreoffice_help import help_pages
from keras_rnnattn.datasets.sources import cached_rows, find_source

# Slovak (`klasik-sk`) and kernel patches (`lkml`): not Czech prose.
SKIPPED_FILES_CS = ("klasik-sk", "lkml")
_ANY_LETTER_RE = re.compile(r"[^\W\d_]")


def load_fortunes_cs(split="train", path=None):
    """The prose cookies of Debian's `fortunes-cs`, one document each.

    Everyday Czech (and some Slovak and English, which the files mix in):
    sayings, jokes, quotations and short dialogues from
    `/usr/share/games/fortunes/cs` (GPL), read with `parse_fortunes` (any
    alphabet's letters) from every file but `SKIPPED_FILES_CS`, each cookie
    once. Split by cookie with `split_documents`, keyed `<file>/<index>`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the folder. By default
            `/usr/share/games/fortunes/cs`, then the cache
            (`fetch("fortunes_cs")`).

    Returns:
        list of str, one per cookie.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> cookies = load_fortunes_cs("test")  # doctest: +SKIP
    """
    root = Path(find_source("fortunes_cs", path))
    files = [p for p in sorted(root.iterdir()) if not p.suffix and p.is_file()]
    rows = cached_rows(
        "fortunes_cs",
        files,
        lambda: parse_fortune_files(root, SKIPPED_FILES_CS, letters=_ANY_LETTER_RE),
    )
    return split_documents(rows, split)


def load_libreoffice_help_cs(split="train", path=None):
    """The Czech LibreOffice help as documents: instructions and explanations.

    The sentence-like paragraphs of each page of `libreoffice-help-cs`
    (MPL-2.0; `parse_help_prose` with any capital letter), joined by
    newlines, one document per page; split by page with `split_documents`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of `help/cs`. By default
            `/usr/share/libreoffice/help/cs`, then the cache
            (`fetch("libreoffice_help_cs")`).

    Returns:
        list of str, one per page.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> pages = load_libreoffice_help_cs("test")  # doctest: +SKIP
    """
    return help_pages("libreoffice_help_cs", split, path, is_capital=str.isupper)


CZECH_SOURCES = {
    "fortunes_cs": load_fortunes_cs,
    "libreoffice_help_cs": load_libreoffice_help_cs,
}


def load_czech_text(split="train", sources=None):
    """The Czech documents of each source, for diacritics restoration.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        sources: optional list of names of `CZECH_SOURCES` (default: all).

    Returns:
        dict of source name to list of str documents.

    Raises:
        ValueError: an unknown source name.
        DatasetNotFoundError: a package is missing; the message names the
            command that installs it.

    Example:

    >>> docs = load_czech_text("test", ["fortunes_cs"])  # doctest: +SKIP
    """
    sources = list(CZECH_SOURCES) if sources is None else list(sources)
    unknown = [s for s in sources if s not in CZECH_SOURCES]
    if unknown:
        raise ValueError(
            f"load_czech_text: unknown sources {unknown}: expected names from "
            f"{sorted(CZECH_SOURCES)}."
        )
    return {name: CZECH_SOURCES[name](split) for name in sources}
