"""misaki's English lexicons: words and their phonemes in Kokoro's phoneme set."""

import hashlib
import json
import zipfile
from pathlib import Path

from keras_rnnattn.datasets.sources import find_source, package_data_file
from keras_rnnattn.datasets.splits import check_split

DIALECTS = ("us", "gb")

# misaki.en.US_VOCAB and GB_VOCAB (misaki 0.9.4): every symbol its English G2P
# writes, the stress marks ˈ ˌ included. Kept here so that checking an output
# needs no misaki.
MISAKI_SYMBOLS = {
    "us": frozenset("AIOWYbdfhijklmnpstuvwzæðŋɑɔəɛɜɡɪɹɾʃʊʌʒʤʧˈˌθᵊᵻʔ"),
    "gb": frozenset("AIQWYabdfhijklmnpstuvwzðŋɑɒɔəɛɜɡɪɹʃʊʌʒʤʧˈˌːθᵊ"),
}

# sha1(word) % 20: 0 is test and 1 validation (gold words without variants).
BUCKETS = 20
SPLIT_BUCKET = {"test": 0, "validation": 1}


def word_bucket(word):
    """The split bucket of a word: `int(sha1(word), 16) % 20`.

    Args:
        word: str, as the lexicon spells it (case kept).

    Returns:
        int in [0, 20): 0 puts a gold word in test, 1 in validation.

    Example:

    >>> word_bucket("Aaron")
    0
    """
    return int(hashlib.sha1(word.encode("utf-8")).hexdigest(), 16) % BUCKETS


def _installed(name):
    """misaki's data file `name`, from the installed package (not imported)."""
    return package_data_file("misaki", name)


def _read(name, path):
    """The JSON lexicon `name` from the installed misaki, a folder or the wheel."""
    if path is None:
        installed = _installed(name)
        if installed is not None:
            return json.loads(installed.read_text(encoding="utf-8"))
    source = Path(find_source("misaki", path))
    if source.is_dir():
        for candidate in (source / name, source / "misaki" / "data" / name):
            if candidate.exists():
                return json.loads(candidate.read_text(encoding="utf-8"))
        wheels = sorted(source.glob("misaki-*.whl"))
        if not wheels:
            raise ValueError(
                f"{source} holds neither {name} nor a misaki wheel: pass the file's "
                f"folder or the wheel. Received: path={str(source)!r}"
            )
        source = wheels[-1]
    if source.suffix != ".whl":
        raise ValueError(
            "`path` must be a misaki wheel or a folder holding misaki's data files. "
            f"Received: path={str(source)!r}"
        )
    with zipfile.ZipFile(source) as wheel:
        member = f"misaki/data/{name}"
        if member not in wheel.namelist():
            raise ValueError(
                f"{source} holds no {member}: pass the misaki 0.9.4 wheel. "
                f"Received: path={str(source)!r}"
            )
        return json.loads(wheel.read(member).decode("utf-8"))


def _check_dialect(dialect):
    if dialect not in DIALECTS:
        raise ValueError(
            f"`dialect` must be one of {DIALECTS} (misaki's American and British "
            f"lexicons). Received: dialect={dialect!r}"
        )


def load_misaki_lexicon(split="train", dialect="us", path=None):
    """English words and their misaki phonemes, for Kokoro-style G2P models.

    misaki (Apache-2.0) is the G2P library of the Kokoro text-to-speech models;
    its lexicons are `<dialect>_gold.json` (90,201 American words, 4 in its
    ratings) and `<dialect>_silver.json` (93,361, rated 3). A word is spelled
    as written (names keep their capitals) and its phonemes are a string of
    misaki's symbols (`MISAKI_SYMBOLS`), stress marks `ˈ ˌ` before the vowel.
    The split is by word: a gold word with one pronunciation whose
    `word_bucket` is 0 is test, 1 validation; training is every other gold
    word and every silver word that is in neither (gold first where a word is
    in both). Gold words with part-of-speech variants (790 American ones, such
    as "read") are training only, with their `DEFAULT` pronunciation, the one
    misaki uses without a tag.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"` (every word,
            gold first).
        dialect: `"us"` (American, the default) or `"gb"` (British).
        path: optional path of the misaki wheel or of a folder holding its
            data files. By default the installed `misaki` package (found
            without importing it), then `cache_dir()/misaki-0.9.4-...whl`.

    Returns:
        `(words, phonemes)`: two lists of str in lexicon order.

    Raises:
        DatasetNotFoundError: neither the package nor the wheel is there; the
            message gives the command that puts it there.

    Example:

    >>> words, phonemes = load_misaki_lexicon("test")  # doctest: +SKIP
    >>> len(words), words[3], phonemes[3]  # doctest: +SKIP
    (4553, 'ASIC', 'ˈAsɪk')
    """
    check_split(split)
    _check_dialect(dialect)
    gold = _read(f"{dialect}_gold.json", path)
    silver = _read(f"{dialect}_silver.json", path)
    rows = []
    for word, phonemes in gold.items():
        if isinstance(phonemes, dict):
            if split in ("train", "all") and phonemes.get("DEFAULT"):
                rows.append((word, phonemes["DEFAULT"]))
            continue
        bucket = word_bucket(word)
        if split == "all" or bucket == SPLIT_BUCKET.get(split, -1):
            rows.append((word, phonemes))
        elif split == "train" and bucket not in SPLIT_BUCKET.values():
            rows.append((word, phonemes))
    if split in ("train", "all"):
        rows.extend(
            (word, phonemes)
            for word, phonemes in silver.items()
            if word not in gold and isinstance(phonemes, str)
        )
    return [w for w, _ in rows], [p for _, p in rows]
