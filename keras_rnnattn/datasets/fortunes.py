"""Debian's fortune cookies (BSD licence): short everyday text, quotes and dialogue."""

import re
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source

# Pictures, verse, foreign-language and code files; the rest is prose.
SKIPPED_FILES = ("art", "ascii-art", "songs-poems", "translate-me", "perl", "zippy")
# The files of `fortunes-min`, which `apt-get install fortunes` puts beside the
# `fortunes` package's own and `fetch("fortunes")` does not: the corpus is the
# `fortunes` package's files, however it was installed.
FORTUNES_MIN_FILES = ("fortunes", "literature", "riddles")
_ATTRIBUTION_RE = re.compile(r"^\s*(--|~~|—)")
_LETTERS_RE = re.compile(r"[A-Za-z]")


def parse_fortunes(text, min_words=4, max_words=200, letters=_LETTERS_RE):
    """The prose cookies of one fortune file, each on one line.

    Cookies are separated by lines holding `%`. Attribution lines (`-- Name`)
    are dropped and the rest joined with single spaces. Kept: cookies of
    `min_words` to `max_words` words that start with a capital letter or a
    quote, end with `.`, `?`, `!` or a closing quote, and are mostly letters
    (no pictures, tables or code).

    Args:
        text: str, the file.
        min_words: int.
        max_words: int.
        letters: compiled pattern of one letter (ASCII letters by default;
            `re.compile(r"[^\\W\\d_]")` for any alphabet).

    Returns:
        list of str.

    Example:

    >>> parse_fortunes("A friend is a present you give yourself.\\n"
    ...                "\\t\\t-- R. L. Stevenson\\n%\\n#!/bin/sh\\n%\\n")
    ['A friend is a present you give yourself.']
    """
    out = []
    for cookie in text.split("\n%\n"):
        lines = [x for x in cookie.strip("\n%").splitlines() if x.strip()]
        lines = [x for x in lines if not _ATTRIBUTION_RE.match(x)]
        if not lines or any(len(x) - len(x.lstrip()) > 8 for x in lines):
            continue  # verse, tables or pictures indented for layout
        prose = " ".join(" ".join(lines).split())
        n_words = len(prose.split())
        if not min_words <= n_words <= max_words:
            continue
        if not (prose[0].isupper() or prose[0] in "\"'“") or prose[-1] not in ".?!\"'”":
            continue
        if len(letters.findall(prose)) < 0.7 * len(prose.replace(" ", "")):
            continue
        out.append(prose)
    return out


def parse_fortune_files(root, skipped=(), letters=_LETTERS_RE):
    """`(key, cookie)` rows of the prose cookies of every fortune file in `root`.

    Files with a suffix (`.dat`, `.u8`) and those named in `skipped` are left
    out; each cookie is kept once, where it first appears (files in name
    order), keyed `<file>/<index>`.

    Args:
        root: `pathlib.Path` of the folder.
        skipped: names of files to leave out.
        letters: `parse_fortunes`'s letter pattern.

    Returns:
        list of `(key, cookie)` tuples of str.
    """
    rows, seen = [], set()
    for path in sorted(root.iterdir()):
        if path.suffix or path.name in skipped or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for i, cookie in enumerate(parse_fortunes(text, letters=letters)):
            if cookie not in seen:  # a cookie in several files: its first place
                seen.add(cookie)
                rows.append((f"{path.name}/{i}", cookie))
    return rows


def load_fortunes(split="train", path=None):
    """The prose fortune cookies of Debian's `fortunes` package, one document each.

    Quotations, jokes, short dialogues and one-liners from
    `/usr/share/games/fortunes` (BSD licence, University of California; the
    offensive files are in another package), read with `parse_fortunes`
    from every file but pictures, verse and code (`SKIPPED_FILES`), each
    cookie once (where it first appears, files in name order): 10,420 cookies,
    252,593 words. Split by cookie with `split_documents`, keyed
    `<file>/<index>`.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the fortunes folder. By default
            `/usr/share/games/fortunes`, then `cache_dir()/fortunes/...`
            (`fetch("fortunes")`).

    Returns:
        list of str, one per cookie.

    Raises:
        DatasetNotFoundError: the package is missing; the message names the
            command that installs it.

    Example:

    >>> cookies = load_fortunes("test")  # doctest: +SKIP
    """
    root = Path(find_source("fortunes", path))
    files = [p for p in sorted(root.iterdir()) if not p.suffix and p.is_file()]
    rows = cached_rows(
        "fortunes",
        files,
        lambda: parse_fortune_files(root, SKIPPED_FILES + FORTUNES_MIN_FILES),
    )
    return split_documents(rows, split)
