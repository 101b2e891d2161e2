"""The loaders on the real corpora: counts and first items of shared/DATA.md.

Each test is skipped, with the command that installs the corpus, where the
corpus is not on this machine.
"""

import time

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    install_command,
    load_ding_de_en,
    load_libreoffice_help_de_en,
    load_movie_snippets,
    load_wordnet_topics,
    load_world_english_bible,
    sources,
)
from keras_rnnattn.text import BpeTokenizer
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def real_source(name):
    """The corpus as installed here, found before the tests isolate the cache."""
    for place in sources.candidates(name):
        if place.exists():
            return place
    return None


def needs(name):
    path = real_source(name)
    return pytest.mark.skipif(
        path is None, reason=f"corpus not installed: {install_command(name)}"
    ), path


DING_MARK, DING = needs("ding_de_en")
MOVIE_MARK, MOVIE = needs("movie_snippets")
WORDNET_MARK, WORDNET = needs("wordnet_topics")
BIBLE_MARK, BIBLE = needs("world_english_bible")
HELP_DE_MARK, HELP_DE = needs("libreoffice_help_de")
HELP_EN_MARK, HELP_EN = needs("libreoffice_help_en")


@DING_MARK
def test_ding_counts_and_first_test_pair():
    pairs = load_ding_de_en("all", path=DING)
    assert len(pairs) == 16570
    assert np.median([len(en.split()) for _, en in pairs]) == 7
    test = load_ding_de_en("test", path=DING)
    assert test[0] == (
        "Der Film folgt genau der Shakespear’schen Handlung.",
        "The film faithfully follows Shakespeare’s plot.",
    )
    sizes = [len(load_ding_de_en(s, path=DING)) for s in ("validation", "train")]
    assert [len(test)] + sizes == [1000, 500, 15070]


@DING_MARK
def test_bpe_on_ding_trains_in_seconds_and_round_trips():
    train = load_ding_de_en("train", path=DING)
    texts = [de for de, _ in train] + [en for _, en in train]
    start = time.perf_counter()
    tok = BpeTokenizer(max_vocab=8000).fit(texts)
    seconds = time.perf_counter() - start
    assert tok.vocabulary_size == 8000
    assert seconds < 60, f"BPE training took {seconds:.1f} s"
    test = [s for pair in load_ding_de_en("test", path=DING) for s in pair]
    ids = tok.encode_batch(test, add_eos=True)
    unknown = int((ids == tok.unk_id).sum())
    exact = sum(a == b for a, b in zip(tok.decode_batch(ids), test))
    assert unknown <= 5  # only characters never seen in training
    assert exact >= 0.99 * len(test)


@MOVIE_MARK
def test_movie_snippets_counts_and_first_test_snippet():
    texts, labels = load_movie_snippets("all", path=MOVIE)
    assert len(texts) == 10568 and int(labels.sum()) == 5242
    test, test_labels = load_movie_snippets("test", path=MOVIE)
    assert test[0].startswith(
        "A superfluous sequel...plagued by that old familiar feeling"
    )
    assert test_labels[0] == 0
    assert len(test) == 1000
    assert len(load_movie_snippets("train", path=MOVIE)[0]) == 9068


@WORDNET_MARK
def test_wordnet_counts():
    glosses, labels = load_wordnet_topics("all", path=WORDNET)
    assert len(glosses) == 117659
    assert len(np.unique(labels)) == 45
    assert len(load_wordnet_topics("test", path=WORDNET)[0]) == 5000
    assert len(load_wordnet_topics("train", path=WORDNET)[0]) == 107659


@BIBLE_MARK
def test_world_english_bible_lines_and_splits():
    text = load_world_english_bible("all", path=BIBLE)
    lines = text.split("\n")
    assert len(lines) == 37481
    assert lines[1] == "In the beginning, God created the heavens and the earth."
    assert "<" not in lines[1] and "  " not in text
    sizes = [
        len(load_world_english_bible(s, path=BIBLE).split("\n"))
        for s in ("train", "validation", "test")
    ]
    assert sum(sizes) == 37481 and sizes[1] == sizes[2] == 1800


@HELP_DE_MARK
@HELP_EN_MARK
def test_libreoffice_help_counts_and_splits():
    pairs = load_libreoffice_help_de_en("all", HELP_DE, HELP_EN)
    assert len(pairs) == 15114
    assert all(3 <= len(en.split()) <= 25 and de != en for de, en in pairs)
    sizes = [
        len(load_libreoffice_help_de_en(s, HELP_DE, HELP_EN))
        for s in ("train", "validation", "test")
    ]
    assert sizes == [13614, 500, 1000]
