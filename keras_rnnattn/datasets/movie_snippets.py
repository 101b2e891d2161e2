"""Movie review snippets with sentiment labels (Hutto and Gilbert, 2014; MIT)."""

import io
import tarfile
from pathlib import Path

import numpy as np

from keras_rnnattn.datasets.sources import cached_rows, find_source
from keras_rnnattn.datasets.splits import check_split, split_indices

FILE_NAME = "movieReviewSnippets_GroundTruth.txt"
INNER_ARCHIVE = "hutto_ICWSM_2014.tar.gz"
N_TEST = 1000
N_VALIDATION = 500


def parse_movie_snippets(text):
    """Parses `id \\t score \\t text` lines; drops score 0; label 1 if score > 0.

    Args:
        text: str, the whole file.

    Returns:
        list of `(text, label)` tuples with label "0" or "1" (str), file order.

    Example:

    >>> parse_movie_snippets("1\\t2.5\\tGreat.\\r\\n2\\t0\\tMeh.\\r\\n3\\t-1\\tBad.\\r\\n")
    [('Great.', '1'), ('Bad.', '0')]
    """
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise ValueError(
                f"Line {number} of {FILE_NAME} should be `id<TAB>score<TAB>text`. "
                f"Received: line={line[:80]!r}"
            )
        score = float(fields[1])
        if score != 0:
            rows.append((fields[2], "1" if score > 0 else "0"))
    return rows


def _find_member(archive, suffix):
    for member in archive.getmembers():
        if member.isfile() and member.name.endswith(suffix):
            return archive.extractfile(member).read()
    return None


def locate_vader_file(source, file_name=FILE_NAME):
    """The snippet file, or a tarball holding it, given it or its folder."""
    source = Path(source)
    if not source.is_dir():
        return source
    for name in (file_name, INNER_ARCHIVE, "vaderSentiment-3.3.2.tar.gz"):
        if (source / name).exists():
            return source / name
    raise ValueError(
        f"{source} holds neither {file_name} nor a tarball with it: pass the "
        f"file or the vaderSentiment sdist. Received: path={str(source)!r}"
    )


def read_vader_file(source, file_name=FILE_NAME):
    """The text of one of the sdist's rated files (`*_GroundTruth.txt`).

    Args:
        source: path of the file, of a tarball holding it (the sdist or
            `hutto_ICWSM_2014.tar.gz`), or of a folder holding one of them.
        file_name: str, the file's name.

    Returns:
        str.
    """
    source = locate_vader_file(source, file_name)
    if source.name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(source) as archive:
            data = _find_member(archive, "/" + file_name)
            if data is None:
                inner = _find_member(archive, INNER_ARCHIVE)
                if inner is not None:
                    with tarfile.open(fileobj=io.BytesIO(inner)) as nested:
                        data = _find_member(nested, "/" + file_name)
        if data is None:
            raise ValueError(
                f"{source} holds no {file_name}: pass the vaderSentiment 3.3.2 "
                f"sdist. Received: path={str(source)!r}"
            )
        return data.decode("utf-8")
    return source.read_text(encoding="utf-8")


def load_movie_snippets(split="train", path=None):
    """10,568 movie review snippets labelled positive (1) or negative (0).

    The Pang & Lee movie review sentences as rated by Hutto and Gilbert (2014),
    `movieReviewSnippets_GroundTruth.txt` inside the vaderSentiment 3.3.2 sdist
    (MIT). Snippets with a mean score of 0 are dropped (10,568 of 10,605
    remain; 5,242 positive). Split with
    `numpy.random.default_rng(1234).permutation`: test is the first 1000,
    validation the next 500, train the other 9,068, each in permutation order;
    `"all"` is file order, the order `kfold_indices(10568)` refers to (the
    literature's 10-fold cross-validation).

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of the sdist, of `hutto_ICWSM_2014.tar.gz`, of the
            text file, or of a folder holding one of them. By default
            `cache_dir()/vaderSentiment-3.3.2.tar.gz`.

    Returns:
        `(texts, labels)`: a list of str and an int32 array.

    Raises:
        DatasetNotFoundError: the sdist is not there; the message gives the
            `pip download` command that puts it there.

    Example:

    >>> texts, labels = load_movie_snippets("test")  # doctest: +SKIP
    >>> texts[0][:40], labels[0]  # doctest: +SKIP
    ('A superfluous sequel...plagued by that o', 0)
    """
    check_split(split)
    source = locate_vader_file(find_source("movie_snippets", path))
    rows = cached_rows(
        "movie_snippets",
        [source],
        lambda: parse_movie_snippets(read_vader_file(source)),
    )
    index = split_indices(len(rows), split, N_TEST, N_VALIDATION)
    texts = [rows[i][0] for i in index]
    labels = np.array([int(rows[i][1]) for i in index], dtype="int32")
    return texts, labels
