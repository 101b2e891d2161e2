"""KerasHubTokenizer: keras-hub tokenizers read by the models, ids and saving."""

import doctest
import io
import json
import sys

import keras
import numpy as np
import pytest

spm = pytest.importorskip("sentencepiece")
keras_hub = pytest.importorskip("keras_hub")

from keras_rnnattn._keras_private import safe_mode_scope  # noqa: E402
from keras_rnnattn.models import AttentionClassifier, Translator  # noqa: E402
from keras_rnnattn.text import (  # noqa: E402
    KerasHubTokenizer,
    SentencePieceTokenizer,
    Tokenizer,
    keras_hub_tokenizer,
)
from keras_rnnattn.text.serialization import (  # noqa: E402
    deserialize_tokenizer,
    serialize_tokenizer,
)
from tests.task_test_utils import run_task_test  # noqa: E402

TEXTS = ["a good film", "a bad film", "good good", "bad", "film film good"] * 4
LABELS = ["pos", "neg", "pos", "neg", "pos"] * 4


@pytest.fixture(scope="module")
def ours():
    return SentencePieceTokenizer(vocabulary_size=30).fit(TEXTS)


@pytest.fixture(scope="module")
def hub(ours):
    # keras-hub's tokenizer on the very model that `SentencePieceTokenizer` trained.
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=ours.model_proto)


def default_proto():
    """A model trained with SentencePiece's own ids: unk 0, bos 1, eos 2, no pad."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXTS), model_writer=model, vocab_size=16, minloglevel=2
    )
    return model.getvalue()


def test_same_ids_as_sentencepiece_tokenizer_on_the_same_model(ours, hub):
    tok = KerasHubTokenizer(hub)
    assert tok.offset == 0
    assert tok.special_ids == {"pad": 0, "unk": 1, "bos": 2, "eos": 3}
    assert tok.vocabulary_size == ours.vocabulary_size == hub.vocabulary_size()
    texts = sorted(set(TEXTS)) + ["film zz"]
    for text in texts:
        assert tok.encode(text) == ours.encode(text)
        assert tok.encode(text) == np.asarray(hub.tokenize(text)).tolist()
        if text in TEXTS:  # an unknown character's token: "<unk>" here
            assert tok.tokenize(text) == ours.tokenize(text)
        assert tok.decode(tok.encode(text, add_eos=True)) == ours.decode(
            ours.encode(text)
        )
    np.testing.assert_array_equal(
        tok.encode_batch(texts, add_bos=True), ours.encode_batch(texts, add_bos=True)
    )


def test_other_special_ids_are_shifted():
    hub = keras_hub.tokenizers.SentencePieceTokenizer(proto=default_proto())
    tok = KerasHubTokenizer(hub)
    assert tok.special_ids == {"pad": None, "unk": 0, "bos": 1, "eos": 2}
    assert tok.offset == 4 and tok.vocabulary_size == hub.vocabulary_size() + 4
    for text in TEXTS[:5]:
        hub_ids = np.asarray(hub.tokenize(text)).tolist()
        assert tok.encode(text) == [i + 4 for i in hub_ids]
        padded = tok.encode_batch([text, "a"], add_bos=True, add_eos=True)[1]
        a = tok.encode("a")
        assert padded.tolist()[: len(a) + 2] == [2] + a + [3]
        assert tok.decode(padded) == "a"
        assert tok.decode(tok.encode(text)) == text
    # Its own bos and eos are written as it writes them (SentencePiece: not at
    # all); the pad it lacks as "<pad>".
    assert tok.decode([2, 8, 3, 0], skip_special=False) == tok.decode([8]) + "<pad>"
    # ids given explicitly win over the ones found
    given = KerasHubTokenizer(hub, special_ids={"bos": None, "pad": 5})
    assert given.special_ids == {"pad": 5, "unk": 0, "bos": None, "eos": 2}
    with pytest.raises(ValueError, match="must differ"):
        KerasHubTokenizer(hub, special_ids={"pad": 0, "unk": 0})
    with pytest.raises(ValueError, match="keys"):
        KerasHubTokenizer(hub, special_ids={"start": 1})


def test_config_is_plain_json_and_rebuilds_in_safe_mode(hub):
    tok = KerasHubTokenizer(hub)
    data = json.loads(json.dumps(serialize_tokenizer(tok)))
    assert data["class_name"] == "KerasHubTokenizer"
    assert data["config"]["tokenizer"]["config"]["proto"] is None  # in the assets
    with safe_mode_scope():  # as `from_preset` and `load_model` read it
        rebuilt = deserialize_tokenizer(data)
    assert type(rebuilt) is KerasHubTokenizer
    assert type(rebuilt.tokenizer) is type(hub)
    assert [rebuilt.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]
    assert rebuilt.get_config() == tok.get_config()


def test_a_config_naming_another_class_is_refused(hub):
    data = serialize_tokenizer(KerasHubTokenizer(hub))
    data["config"]["tokenizer"]["registered_name"] = "os>system"
    with pytest.raises(ValueError, match="registered_name='os>system'"):
        deserialize_tokenizer(data)
    data = serialize_tokenizer(KerasHubTokenizer(hub))
    data["config"]["assets"] = {"../x.spm": ""}
    with pytest.raises(ValueError, match="plain file name"):
        deserialize_tokenizer(data)


def test_loading_without_keras_hub_names_the_extra(hub, monkeypatch):
    data = serialize_tokenizer(KerasHubTokenizer(hub))
    monkeypatch.setitem(sys.modules, "keras_hub", None)
    with pytest.raises(ImportError, match=r'pip install "\.\[hub\]"'):
        deserialize_tokenizer(data)


def test_save_and_load_json(hub, tmp_path):
    tok = KerasHubTokenizer(hub)
    tok.save(str(tmp_path / "tokenizer.json"))
    loaded = Tokenizer.load(str(tmp_path / "tokenizer.json"))
    assert [loaded.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]


def test_not_a_tokenizer_is_refused():
    with pytest.raises(ValueError, match="keras-hub's tokenizer protocol"):
        KerasHubTokenizer(object())
    with pytest.raises(ValueError, match="or of keras-hub"):
        Translator(object(), object())


@pytest.fixture(scope="module")
def classifier(hub):
    keras.utils.set_random_seed(2)
    model = AttentionClassifier(
        tokenizer=hub, labels=["neg", "pos"], embedding_dim=8, units=8
    )
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    model.fit(TEXTS, LABELS, epochs=2, verbose=0)
    return model


@pytest.mark.parametrize("check", ["keras_file", "preset"])
def test_a_classifier_takes_a_hub_tokenizer_and_round_trips(
    classifier, check, tmp_path
):
    assert type(classifier.tokenizer) is KerasHubTokenizer
    run_task_test(classifier, TEXTS[:5], check, targets=LABELS[:5], tmp_path=tmp_path)


def test_a_translator_takes_hub_tokenizers(hub):
    shifted = keras_hub.tokenizers.SentencePieceTokenizer(proto=default_proto())
    keras.utils.set_random_seed(3)
    model = Translator(hub, shifted, embedding_dim=8, units=8, max_target_length=6)
    assert type(model.source_tokenizer) is KerasHubTokenizer
    assert model.target_tokenizer.offset == 4
    x, y = model.encode_pairs(TEXTS[:5], TEXTS[:5])
    assert x[1][:, 0].tolist() == [2] * 5  # bos
    model.compile()
    model.fit(x, y, epochs=1, verbose=0)
    out = model.translate(TEXTS[:2])
    assert len(out) == 2 and all(isinstance(t, str) for t in out)


def test_docstring_examples_run():
    result = doctest.testmod(keras_hub_tokenizer)
    assert result.attempted > 0 and result.failed == 0
