"""Tests of the movie snippets loader on files written in the corpus's format."""

import io
import tarfile

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    kfold_indices,
    load_movie_snippets,
)
from keras_rnnattn.datasets.movie_snippets import parse_movie_snippets
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

ROWS = [
    ("1", "2.26666666667", "A gorgeous, witty, seductive movie."),
    ("2", "-0.6", "Effective but too tepid biopic"),
    ("3", "0", "It is a film."),  # score 0: dropped
    ("4", "3.5", "Utterly ''charming'' – 5 stars."),
    ("5", "-1.8125", "Her fans walked out muttering words like ''horrible''."),
]
EXPECTED_TEXTS = [ROWS[0][2], ROWS[1][2], ROWS[3][2], ROWS[4][2]]
EXPECTED_LABELS = [1, 0, 1, 0]


def snippet_file_text(rows=ROWS):
    # The real file: UTF-8, CRLF line ends, tab-separated, no header.
    return "\r\n".join("\t".join(row) for row in rows) + "\r\n"


def add_file(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def write_sdist(path, rows=ROWS):
    """An sdist laid out like vaderSentiment-3.3.2.tar.gz, with the nested tarball."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as archive:
        add_file(
            archive,
            "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
            snippet_file_text(rows).encode("utf-8"),
        )
        add_file(archive, "hutto_ICWSM_2014/tweets_GroundTruth.txt", b"1\t1\tx\r\n")
    with tarfile.open(path, mode="w:gz") as archive:
        add_file(archive, "vaderSentiment-3.3.2/setup.py", b"")
        add_file(
            archive,
            "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz",
            inner.getvalue(),
        )
    return path


def test_parse_drops_zero_scores_and_labels_by_sign():
    rows = parse_movie_snippets(snippet_file_text())
    assert [text for text, _ in rows] == EXPECTED_TEXTS
    assert [int(label) for _, label in rows] == EXPECTED_LABELS
    with pytest.raises(ValueError, match="Line 2"):
        parse_movie_snippets("1\t1\tok\r\nbroken line\r\n")


def test_reads_the_text_file_the_sdist_and_the_cache(isolated_sources):
    text_file = isolated_sources / "movieReviewSnippets_GroundTruth.txt"
    text_file.write_bytes(snippet_file_text().encode("utf-8"))
    texts, labels = load_movie_snippets("all", path=text_file)
    assert texts == EXPECTED_TEXTS
    assert labels.dtype == np.int32 and labels.tolist() == EXPECTED_LABELS

    with pytest.raises(DatasetNotFoundError) as info:
        load_movie_snippets()
    assert "pip download --no-deps --no-binary :all: vaderSentiment==3.3.2" in str(
        info.value
    )
    cache = isolated_sources / "cache"
    cache.mkdir(exist_ok=True)
    write_sdist(cache / "vaderSentiment-3.3.2.tar.gz", ROWS[:2])
    texts, labels = load_movie_snippets("all")
    assert texts == EXPECTED_TEXTS[:2] and labels.tolist() == [1, 0]


def test_canonical_split_and_folds(isolated_sources):
    n = 1700
    rows = [(str(i), str(1.0 if i % 3 else -1.0), f"Snippet {i}.") for i in range(n)]
    sdist = write_sdist(isolated_sources / "vader.tar.gz", rows)
    everything, all_labels = load_movie_snippets("all", path=sdist)
    test, test_labels = load_movie_snippets("test", path=sdist)
    validation, _ = load_movie_snippets("validation", path=sdist)
    train, _ = load_movie_snippets("train", path=sdist)
    assert (len(test), len(validation), len(train)) == (1000, 500, 200)
    idx = np.random.default_rng(1234).permutation(n)
    assert test[:3] == [everything[i] for i in idx[:3]]
    assert test_labels.tolist() == all_labels[idx[:1000]].tolist()
    assert sorted(test + validation + train) == sorted(everything)
    folds = kfold_indices(len(everything))
    assert len(folds) == 10
    covered = np.sort(np.concatenate([test_idx for _, test_idx in folds]))
    np.testing.assert_array_equal(covered, np.arange(n))
