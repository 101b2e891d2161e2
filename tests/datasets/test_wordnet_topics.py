"""Tests of the WordNet topics loader on small data files in WordNet's format."""

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    WORDNET_LEXNAMES,
    DatasetNotFoundError,
    load_wordnet_topics,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

HEADER = [
    "  1 This is a made-up licence header for a test file.",
    "  2 Header lines start with two spaces and are not synsets.",
]
# offset lex_filenum ss_type w_cnt word lex_id ... | gloss
DATA = {
    "noun": [
        '00000001 05 n 01 cat 0 000 | a small furry pet; "the cat purrs"',
        "00000002 13 n 01 bread 0 000 | food made of flour and water",
    ],
    "verb": ['00000003 38 v 01 run 0 000 | move fast on foot; "she runs daily"'],
    "adj": [
        "00000004 00 a 01 big 0 000 | large in size",
        "00000005 44 s 01 x 0 000 | y",
    ],
    "adv": ["00000006 02 r 01 fast 0 000 | quickly"],
}


def write_wordnet(folder, data=DATA):
    folder.mkdir(parents=True, exist_ok=True)
    for pos, lines in data.items():
        (folder / f"data.{pos}").write_text("\n".join(HEADER + lines) + "\n")
    return folder


def test_embedded_lexnames_are_the_45_published_classes():
    assert len(WORDNET_LEXNAMES) == 45 == len(set(WORDNET_LEXNAMES))
    assert WORDNET_LEXNAMES[3] == "noun.Tops"
    assert WORDNET_LEXNAMES[29] == "verb.body"
    assert WORDNET_LEXNAMES[44] == "adj.ppl"


def test_parses_glosses_and_labels_in_file_order(isolated_sources):
    folder = write_wordnet(isolated_sources / "wn")
    glosses, labels = load_wordnet_topics("all", path=folder)
    assert glosses == [
        'a small furry pet; "the cat purrs"',
        "food made of flour and water",
        'move fast on foot; "she runs daily"',
        "large in size",
        "y",
        "quickly",
    ]
    assert [WORDNET_LEXNAMES[i] for i in labels] == [
        "noun.animal", "noun.food", "verb.motion", "adj.all", "adj.ppl", "adv.all",
    ]  # fmt: skip
    assert labels.dtype == np.int32
    short, _ = load_wordnet_topics("all", path=folder, definition_only=True)
    assert short[0] == "a small furry pet" and short[2] == "move fast on foot"


def test_split_sizes_and_missing_errors(isolated_sources):
    lines = [f"{i:08d} {i % 45:02d} n 01 w 0 000 | gloss {i}" for i in range(10_200)]
    folder = write_wordnet(isolated_sources / "wn", {**DATA, "noun": lines})
    sizes = [
        len(load_wordnet_topics(s, path=folder)[0]) for s in ("test", "validation")
    ]
    train, _ = load_wordnet_topics("train", path=folder)
    assert sizes == [5000, 5000] and len(train) == 10_204 - 10_000
    with pytest.raises(DatasetNotFoundError, match="apt-get install wordnet-base"):
        load_wordnet_topics()
    (folder / "data.adv").unlink()
    with pytest.raises(ValueError, match="data.adv"):
        load_wordnet_topics(path=folder)
    (folder / "data.adv").write_text("00000006 45 r 01 fast 0 000 | quickly\n")
    with pytest.raises(ValueError, match="number 45"):
        load_wordnet_topics(path=folder)
