"""Tests of misaki's lexicon loader, on small files in its format and on the wheel."""

import hashlib
import json
import zipfile

import pytest

from keras_rnnattn.datasets import (
    MISAKI_SYMBOLS,
    DatasetNotFoundError,
    install_command,
    load_misaki_lexicon,
    word_bucket,
)
from keras_rnnattn.datasets.misaki_lexicon import _installed
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def bucketed(bucket, count, prefix):
    """`count` words whose sha1 % 20 is `bucket`."""
    words, i = [], 0
    while len(words) < count:
        word = f"{prefix}{i}"
        if int(hashlib.sha1(word.encode()).hexdigest(), 16) % 20 == bucket:
            words.append(word)
        i += 1
    return words


@pytest.fixture
def lexicon(tmp_path):
    test, validation, train = (bucketed(b, 3, "w") for b in (0, 1, 7))
    variant = bucketed(0, 1, "read")[0]  # a test bucket, but it has variants
    gold = {w: "ˈtɛst" for w in test + validation + train}
    gold[variant] = {"DEFAULT": "ɹˈɛd", "VBD": "ɹˈɛd", "VB": "ɹˈid"}
    silver = {"Zed": "zˈɛd", test[0]: "wɹˈɔŋ", train[0]: "wɹˈɔŋ"}
    folder = tmp_path / "misaki" / "data"
    folder.mkdir(parents=True)
    (folder / "us_gold.json").write_text(json.dumps(gold), encoding="utf-8")
    (folder / "us_silver.json").write_text(json.dumps(silver), encoding="utf-8")
    return tmp_path, test, validation, train, variant


def test_the_split_is_sha1_mod_20_and_variants_train_only(lexicon):
    root, test, validation, train, variant = lexicon
    assert load_misaki_lexicon("test", path=root)[0] == test
    assert load_misaki_lexicon("validation", path=root)[0] == validation
    words, phonemes = load_misaki_lexicon("train", path=root)
    # Gold first, the variant entry with its DEFAULT, then silver words in
    # neither split (a silver copy of a gold word never overrides it).
    assert words == train + [variant, "Zed"]
    assert phonemes[-2:] == ["ɹˈɛd", "zˈɛd"]
    assert phonemes[0] == "ˈtɛst"
    assert not set(words) & set(test + validation)


def test_reads_the_wheel_as_the_folder(lexicon, tmp_path):
    root, *_ = lexicon
    wheel = tmp_path / "misaki-0.9.4-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("us_gold.json", "us_silver.json"):
            archive.write(root / "misaki" / "data" / name, f"misaki/data/{name}")
    for split in ("train", "validation", "test", "all"):
        assert load_misaki_lexicon(split, path=wheel) == load_misaki_lexicon(
            split, path=root
        )


def test_bad_arguments_and_a_missing_lexicon(tmp_path):
    with pytest.raises(ValueError, match="dialect"):
        load_misaki_lexicon("test", dialect="au", path=tmp_path)
    with pytest.raises(ValueError, match="split"):
        load_misaki_lexicon("dev", path=tmp_path)
    with pytest.raises(ValueError, match="misaki wheel"):
        load_misaki_lexicon("test", path=tmp_path)
    with pytest.raises(DatasetNotFoundError, match="pip download --no-deps misaki"):
        load_misaki_lexicon("test", path=tmp_path / "absent")
    assert "misaki==0.9.4" in install_command("misaki")


def test_word_bucket_is_the_published_rule():
    for word in ("Aaron", "read", "Kokoro", "naïve"):
        digest = hashlib.sha1(word.encode("utf-8")).hexdigest()
        assert word_bucket(word) == int(digest, 16) % 20


def test_the_installed_lexicon():
    if _installed("us_gold.json") is None:
        pytest.skip("misaki is not installed: pip install '.[misaki]'")
    test_words, test_phonemes = load_misaki_lexicon("test")
    val_words, _ = load_misaki_lexicon("validation")
    train_words, train_phonemes = load_misaki_lexicon("train")
    assert (len(test_words), len(val_words), len(train_words)) == (4553, 4388, 174620)
    assert test_words[:3] == ["'Merica", "'un", "A-frame"]
    assert not set(test_words) & set(train_words)
    assert not set(val_words) & set(train_words)
    symbols = set("".join(test_phonemes + train_phonemes))
    assert symbols <= MISAKI_SYMBOLS["us"]
