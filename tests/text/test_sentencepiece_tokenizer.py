"""SentencePieceTokenizer: the project's ids, lossless round trips, saving."""

import copy
import doctest
import io
import json
import os
import pickle
import sys

import numpy as np
import pytest

spm = pytest.importorskip("sentencepiece")

from keras_rnnattn.text import (  # noqa: E402
    BpeTokenizer,
    SentencePieceTokenizer,
    Tokenizer,
    WordTokenizer,
    sentencepiece_tokenizer,  # noqa: E402
)
from keras_rnnattn.text.serialization import (  # noqa: E402
    as_tokenizer,
    deserialize_tokenizer,
    serialize_tokenizer,
)

TEXTS = [
    "Ich habe keine Zeit.",
    "I have no time.",
    "Grüße aus Köln – 15 % mehr, bei 40°C!",
    "Das ist mit ’ner Katze passiert.",
    'He said: "don\'t"  (twice),   then left.',
    "  leading and trailing spaces  ",
    "tabs\tand\tnew\nlines",
    "Zahlen: 3.14, 1,000 und 2026-11-27.",
] * 3


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def tok(request):
    return SentencePieceTokenizer(vocabulary_size=120, model_type=request.param).fit(
        TEXTS
    )


def test_decode_restores_every_text(tok):
    # The JSON BPE loses "15 %" -> "15%" and "40°C" -> "40 ° C"; this does not.
    for text in set(TEXTS):
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert all(4 <= i < tok.vocabulary_size for i in ids)
    rows = tok.encode_batch(sorted(set(TEXTS)), add_bos=True, add_eos=True)
    assert tok.decode_batch(rows) == sorted(set(TEXTS))


def test_special_ids_are_the_projects(tok):
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (0, 1, 2, 3)
    assert tok.vocabulary.tokens[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    processor = spm.SentencePieceProcessor(model_proto=tok.model_proto)
    assert processor.get_piece_size() == tok.vocabulary_size
    assert [processor.id_to_piece(i) for i in range(4)] == tok.vocabulary.tokens[:4]
    # Every piece has the id the vocabulary gives it.
    for i in range(tok.vocabulary_size):
        assert tok.vocabulary.token_to_id(processor.id_to_piece(i)) == i


def test_encode_batch_pads_like_the_other_tokenizers(tok):
    texts = ["I have no time.", "Ich"]
    rows = tok.encode_batch(texts, add_bos=True, add_eos=True)
    first, second = tok.encode(texts[0]), tok.encode(texts[1])
    assert rows.dtype == np.int32
    assert rows.shape == (2, len(first) + 2)
    assert rows[0].tolist() == [2] + first + [3]
    assert rows[1].tolist() == [2] + second + [3] + [0] * (len(first) - len(second))
    assert rows.tolist() == [
        [2] + tok.encode(t) + [3] + [0] * (rows.shape[1] - len(tok.encode(t)) - 2)
        for t in texts
    ]
    cut = tok.encode_batch(texts, max_length=3, add_eos=True)
    assert cut[0].tolist() == first[:2] + [3]
    with pytest.raises(ValueError, match="max_length=3"):
        tok.encode_batch(texts, max_length=3, truncate=False)
    with pytest.raises(ValueError, match="list of texts"):
        tok.encode_batch("one text")


def test_decode_stops_at_eos_and_can_show_special_tokens(tok):
    ids = tok.encode("I have no time.")
    assert tok.decode([2] + ids + [3] + ids + [0]) == "I have no time."
    shown = tok.decode([2] + ids + [3, 0], skip_special=False)
    assert shown == "<bos>I have no time.<eos><pad>"
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([tok.vocabulary_size])


def test_unknown_characters_become_unk():
    tok = SentencePieceTokenizer(vocabulary_size=60).fit(TEXTS)
    ids = tok.encode("Zeit ψ")
    assert tok.unk_id in ids
    assert tok.decode(ids) == "Zeit <unk>"
    # With byte fallback they are spelled in bytes, and come back.
    tok = SentencePieceTokenizer(vocabulary_size=400, byte_fallback=True).fit(TEXTS)
    ids = tok.encode("Zeit ψ")
    assert tok.unk_id not in ids and tok.decode(ids) == "Zeit ψ"


def test_lowercase_and_nfc():
    tok = SentencePieceTokenizer(vocabulary_size=80, lowercase=True).fit(TEXTS)
    assert tok.encode("ICH HABE") == tok.encode("ich habe")
    decomposed = "Gru\u0308ße"  # "ü" as u + combining diaeresis
    assert tok.encode(decomposed) == tok.encode("grüße")


def test_sampling_varies_the_segmentation_not_the_text():
    tok = SentencePieceTokenizer(vocabulary_size=120).fit(TEXTS)
    plain = tok.encode("Ich habe keine Zeit.")
    tok.alpha = 0.3
    sampled = {tuple(tok.encode("Ich habe keine Zeit.")) for _ in range(30)}
    assert len(sampled) > 1
    assert all(tok.decode(list(ids)) == "Ich habe keine Zeit." for ids in sampled)
    tok.alpha = 0.0
    assert tok.encode("Ich habe keine Zeit.") == plain
    with pytest.raises(ValueError, match="alpha=1.5"):
        tok.alpha = 1.5


def test_config_is_plain_json_and_rebuilds_the_tokenizer(tok):
    config = tok.get_config()
    assert json.loads(json.dumps(config)) == config
    data = json.loads(json.dumps(serialize_tokenizer(tok)))
    assert data["class_name"] == "SentencePieceTokenizer"
    for rebuilt in (
        deserialize_tokenizer(data),
        as_tokenizer(data, "tokenizer"),
        SentencePieceTokenizer.from_config(config),
        copy.deepcopy(tok),
        pickle.loads(pickle.dumps(tok)),
    ):
        assert type(rebuilt) is SentencePieceTokenizer
        assert rebuilt.get_config() == config
        assert [rebuilt.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]


def test_save_writes_json_and_the_model_file(tok, tmp_path):
    written = tok.save(str(tmp_path / "tokenizer.json"))
    assert written == [
        str(tmp_path / "tokenizer.json"),
        str(tmp_path / "tokenizer.model"),
    ]
    assert sorted(os.listdir(tmp_path)) == ["tokenizer.json", "tokenizer.model"]
    for cls in (Tokenizer, SentencePieceTokenizer):
        loaded = cls.load(str(tmp_path / "tokenizer.json"))
        assert type(loaded) is SentencePieceTokenizer
        assert [loaded.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]
    # The .model file is SentencePiece's own: its runtime gives the same ids.
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "tokenizer.model"))
    assert [processor.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]
    with pytest.raises(ValueError, match="BpeTokenizer.load cannot read"):
        BpeTokenizer.load(str(tmp_path / "tokenizer.json"))


def test_other_tokenizers_still_save_one_json_file(tmp_path):
    word = WordTokenizer().fit(["a b c"])
    assert word.save(str(tmp_path / "w.json")) == [str(tmp_path / "w.json")]
    assert Tokenizer.load(str(tmp_path / "w.json")).encode("c b") == [6, 5]


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_fit_is_deterministic(model_type):
    first, second = (
        SentencePieceTokenizer(vocabulary_size=80, model_type=model_type).fit(TEXTS)
        for _ in range(2)
    )
    assert first.model_proto == second.model_proto


def test_fit_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    SentencePieceTokenizer(vocabulary_size=60).fit(TEXTS)
    assert os.listdir(tmp_path) == []


def test_a_proto_from_elsewhere_is_read_when_its_ids_match(tok, tmp_path):
    path = tmp_path / "m.model"
    path.write_bytes(tok.model_proto)
    for proto in (tok.model_proto, str(path)):
        other = SentencePieceTokenizer(proto=proto)
        assert [other.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]
    # SentencePiece's default ids (unk 0, bos 1, eos 2, no pad) are refused.
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXTS), model_writer=model, vocab_size=60, minloglevel=2
    )
    with pytest.raises(ValueError, match=r"KerasHubTokenizer.*\(-1, 0, 1, 2\)"):
        SentencePieceTokenizer(proto=model.getvalue())
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SentencePieceTokenizer(proto=b"not a model")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model_type": "word"}, "model_type='word'"),
        ({"vocabulary_size": 3}, "vocabulary_size=3"),
        ({"character_coverage": 0}, "character_coverage=0"),
        ({"alpha": -0.1}, "alpha=-0.1"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SentencePieceTokenizer(**kwargs)


def test_unfitted_empty_and_damaged_inputs_raise_value_errors():
    tok = SentencePieceTokenizer(vocabulary_size=60)
    with pytest.raises(ValueError, match="call `fit"):
        tok.encode("a")
    with pytest.raises(ValueError, match="non-empty"):
        tok.fit(["", ""])
    with pytest.raises(ValueError, match="list of texts"):
        tok.fit("one text")
    with pytest.raises(ValueError, match="smaller than required_chars.*size=6"):
        SentencePieceTokenizer(vocabulary_size=6).fit(["abcdefgh ijk"])
    config = SentencePieceTokenizer(vocabulary_size=60).fit(TEXTS).get_config()
    config["proto"] = "%%% not base64"
    with pytest.raises(ValueError, match="base64"):
        deserialize_tokenizer(
            {"class_name": "SentencePieceTokenizer", "config": config}
        )


def test_missing_sentencepiece_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(ImportError, match=r'pip install "\.\[text\]"'):
        SentencePieceTokenizer(vocabulary_size=60).fit(TEXTS)


def test_docstring_examples_run():
    result = doctest.testmod(sentencepiece_tokenizer)
    assert result.attempted > 0 and result.failed == 0
