"""Tests of CharTokenizer."""

import json

import numpy as np

from keras_rnnattn.text import CharTokenizer
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

TEXT = "In the beginning, God created\nthe heavens and the earth.\n"


def test_round_trip_is_exact_including_spaces_and_newlines():
    tok = CharTokenizer().fit([TEXT])
    ids = tok.encode(TEXT)
    assert len(ids) == len(TEXT)
    assert tok.decode(ids) == TEXT
    assert tok.vocabulary_size == 4 + len(set(TEXT))
    # The most frequent characters get the first free ids: "e" (9), " " (8).
    assert tok.vocabulary.tokens[4:6] == ["e", " "]


def test_unknown_characters_and_nfc():
    tok = CharTokenizer(lowercase=True).fit(["Grün ist schön."])
    assert tok.encode("Gru\u0308n") == tok.encode("grün")  # NFC, then lowercase
    ids = tok.encode("grün!")
    assert ids[-1] == tok.unk_id and tok.unk_id not in ids[:-1]


def test_batch_for_language_modelling():
    tok = CharTokenizer().fit([TEXT])
    batch = tok.encode_batch(["God", "the earth"], add_bos=True, add_eos=True)
    assert batch.dtype == np.int32 and batch.shape == (2, 11)
    assert batch[0, 0] == tok.bos_id and batch[0, 4] == tok.eos_id
    assert (batch[0, 5:] == tok.pad_id).all()
    assert tok.decode_batch(batch) == ["God", "the earth"]


def test_fold_letters_reads_marked_letters_as_their_base_letters():
    tok = CharTokenizer(fold_letters=True).fit(["cafe naive strasse Zoe"])
    assert tok.encode("café naïve straße Zoë") == tok.encode("cafe naive strasse Zoe")
    # A letter with no spelling in the vocabulary stays unknown.
    assert tok.encode("😀")[0] == tok.unk_id
    assert tok.folding["ß"] == "ss" and "a" not in tok.folding
    # Without the flag, nothing is folded and the config is as it was.
    plain = CharTokenizer().fit(["cafe"])
    assert plain.encode("é") == [plain.unk_id]
    assert "fold_letters" not in plain.get_config() and plain.folding == {}


def test_the_folding_table_travels_in_the_config_and_comes_back():
    tok = CharTokenizer(lowercase=True, fold_letters=True).fit(["cafe"])
    config = tok.get_config()
    assert config["fold_letters"] and config["folding"]["é"] == "e"
    assert "É" not in config["folding"]  # lowercased first
    back = CharTokenizer.from_config(json.loads(json.dumps(config)))
    assert back.get_config() == config
    assert back.encode("CAFÉ") == tok.encode("cafe")
