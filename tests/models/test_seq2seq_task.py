"""`Seq2SeqTask`: what a model gets from the four hooks alone."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.models import Translator, TranslatorEnsemble
from keras_rnnattn.models.seq2seq_task import Seq2SeqTask
from keras_rnnattn.text import CharTokenizer

TOKENIZER = CharTokenizer().fit(["abxy"])
OPTIONS = {
    "batch_size": None,
    "sequence_length": None,
    "max_length": 6,
    "beam_size": 2,
    "length_penalty": 0.0,
    "coverage_penalty": 0.0,
}


class Bigram(Seq2SeqTask):
    """Not a Translator: the next token depends on the previous one only.

    Its table sends bos to "a", "a" to "b" and "b" to the end token, so every
    non-empty source translates to "ab".
    """

    def __init__(self, **kwargs):
        super().__init__(TOKENIZER, TOKENIZER, 16, 8, **kwargs)
        ids = TOKENIZER.vocabulary.token_to_id
        table = np.full((TOKENIZER.vocabulary_size,) * 2, -5.0, "float32")
        for previous, following in (
            (TOKENIZER.bos_id, ids("a")),
            (ids("a"), ids("b")),
            (ids("b"), TOKENIZER.eos_id),
        ):
            table[previous, following] = 5.0
        self.table = self.add_weight(
            shape=table.shape, initializer=keras.initializers.Constant(table)
        )
        self.built = True

    @property
    def has_attention(self):
        return False

    def forward_pass(self, source_ids, target_in_ids, training=None):
        return ops.take(self.table, ops.cast(target_in_ids, "int32"), axis=0), None

    def initial_state(self, source_ids):
        batch = ops.shape(source_ids)[0]
        return {
            "states": [ops.zeros((batch, 1))],
            # One tensor over the source positions, one of a fixed width.
            "memory": {
                "source": ops.cast(source_ids, "float32"),
                "bias": ops.zeros((batch, 3)),
            },
        }

    def next_fn(self, token_ids, state):
        return ops.take(self.table, ops.cast(token_ids, "int32"), axis=0), state


def test_a_model_with_the_four_hooks_translates():
    model = Bigram()
    assert model.translate(["xy", "", "yyx"]) == ["ab", "", "ab"]
    assert model.translate("x", beam_size=2) == "ab"
    assert model.translate([]) == []
    with pytest.raises(ValueError, match="no attention"):
        model.translate("x", return_attention=True)
    with pytest.raises(ValueError, match="Bigram.fit: received no samples"):
        model.fit([], None)


def test_export_endpoints_run_without_tensorflow():
    model = Bigram()
    endpoints = {
        e.name: e for e in model.export_endpoints(dict(OPTIONS, sequence_length=5))
    }
    assert sorted(endpoints) == ["beam_search", "decode_step", "encode", "greedy"]
    step = endpoints["decode_step"].inputs
    # Only the memory that depends on the source length gets its length.
    shapes = sorted(
        shape for name, (shape, _) in step.items() if name.startswith("memory")
    )
    assert shapes == [(None, 3), (None, 5)]
    source = model.encode_source(["xy", "y"])
    tokens, _ = model.generate_ids(source, max_length=6)
    out = endpoints["greedy"].fn(source_ids=source)
    np.testing.assert_array_equal(ops.convert_to_numpy(out["tokens"]), tokens)
    state = endpoints["encode"].fn(source_ids=source)
    ids = np.full((2,), TOKENIZER.bos_id, "int32")
    logits = endpoints["decode_step"].fn(token_ids=ids, **state)["logits"]
    assert (
        np.argmax(ops.convert_to_numpy(logits), -1).tolist()
        == [TOKENIZER.vocabulary.token_to_id("a")] * 2
    )


def test_translator_without_attention_exports_a_fixed_width_memory():
    model = Translator(TOKENIZER, TOKENIZER, embedding_dim=4, units=6, attention="none")
    assert not model.has_attention
    inputs = {
        e.name: e.inputs
        for e in model.export_endpoints(dict(OPTIONS, sequence_length=7))
    }["decode_step"]
    # The plain decoder's memory is the encoder summary (B, 2 * units).
    assert inputs["memory_0"] == ((None, 12), "float32")


def test_ensemble_implements_the_hooks_over_its_members():
    members = [
        Translator(TOKENIZER, TOKENIZER, embedding_dim=4, units=u) for u in (6, 8)
    ]
    ensemble = TranslatorEnsemble(members)
    assert ensemble.has_attention and isinstance(ensemble, (Translator, Seq2SeqTask))
    assert not hasattr(ensemble, "attention")
    (source, target_in), _ = ensemble.encode_pairs(["xy", "a"], ["ab", "b"])
    logits, alignments = ensemble.forward_pass(source, target_in)
    outs = [m.forward_pass(source, target_in) for m in members]
    probs = np.mean([ops.convert_to_numpy(ops.softmax(o[0])) for o in outs], axis=0)
    np.testing.assert_allclose(np.exp(ops.convert_to_numpy(logits)), probs, atol=1e-5)
    mean = np.mean([ops.convert_to_numpy(o[1]) for o in outs], axis=0)
    np.testing.assert_allclose(ops.convert_to_numpy(alignments), mean, atol=1e-6)
    state = ensemble.initial_state(source)
    assert len(state["states"]) == len(state["memory"]) == 2
