"""tfa's `AttentionWrapper` ported to `AttentionDecoder` gives tfa's numbers.

The fixtures were computed by tensorflow-addons 0.23 itself
(`scripts/tfa_reference.py`, whose docstring documents every key); the suite
never imports tfa. Each `wrapper.npz` form is rebuilt as an `AttentionDecoder`,
tfa's weights go in through `keras_rnnattn.integrations.tfa.set_tfa_weights`
(the documented mapping), and every step's output, attention vector and
alignments, and the final state, must agree within 1e-5. `port.npz` is a small
tfa NMT model trained in the tfa environment: ported, it translates its
held-out sources to the same greedy and beam-search tokens.
"""

from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search
from keras_rnnattn.integrations.tfa import set_tfa_weights
from keras_rnnattn.layers import AttentionDecoder, BahdanauAttention, LuongAttention

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tfa"
TOLERANCE = 1e-5


def load(name, group=None):
    with np.load(FIXTURES / f"{name}.npz") as data:
        arrays = {key: data[key] for key in data.files}
    if group is None:
        return arrays
    prefix = group + "/"
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def np_(x):
    return ops.convert_to_numpy(x)


def cell_weights(form, names):
    """tfa's cell arrays (kernel, recurrent kernel, bias per cell) in order."""
    return [
        form[f"{name}/{w}"]
        for name in names
        for w in ("kernel", "recurrent_kernel", "bias")
    ]


def as_tfa_port(form, cells, mechanisms, layers):
    """A fixture form as `tfa_wrapper_weights` would have read it from tfa."""
    weights = {f"cell/{j}": a for j, a in enumerate(cell_weights(form, cells))}
    for i, (group, kind) in enumerate(mechanisms):
        weights[f"mechanism_{i}/kind"] = np.array(kind)
        for name in (
            "memory_kernel",
            "query_kernel",
            "attention_v",
            "attention_g",
            "attention_b",
        ):
            if f"{group}/{name}" in form:
                weights[f"mechanism_{i}/{name}"] = form[f"{group}/{name}"]
    for i, group in enumerate(layers):
        weights[f"attention_layer_{i}/0"] = form[f"{group}/kernel"]
    return weights


def luong(**kwargs):
    return LuongAttention("general", **kwargs)


LSTM = {"cell": keras.layers.LSTMCell, "cells": ["cell"], "states": ["h", "c"]}

# form: (decoder arguments, mechanisms (fixture group, kind), attention layer groups)
FORMS = {
    "default": (
        dict(attention=luong, attention_layer_size=None),
        [("mechanism", "luong")],
        [],
    ),
    "linear": (
        dict(attention=luong, attention_layer_size=4, attention_activation=None),
        [("mechanism", "luong")],
        ["attention_layer"],
    ),
    "tanh_layer": (
        dict(
            attention=luong,
            attention_layer=lambda: keras.layers.Dense(4, "tanh", use_bias=False),
        ),
        [("mechanism", "luong")],
        ["attention_layer"],
    ),
    "no_output_attention": (
        dict(
            attention=luong,
            attention_layer_size=4,
            attention_activation=None,
            output_attention=False,
        ),
        [("mechanism", "luong")],
        ["attention_layer"],
    ),
    "stacked": (
        dict(
            attention=luong, attention_layer_size=4, attention_activation=None, layers=2
        ),
        [("mechanism", "luong")],
        ["attention_layer"],
    ),
    "multi": (
        dict(
            attention=lambda: [BahdanauAttention(4), luong()],
            attention_layer_size=[4, 3],
            attention_activation=None,
        ),
        [("mechanism0", "bahdanau"), ("mechanism1", "luong")],
        ["attention_layer0", "attention_layer1"],
    ),
    "gru_bahdanau": (
        dict(
            attention=lambda: BahdanauAttention(4, normalize=True),
            attention_layer_size=4,
            attention_activation=None,
            cell="gru",
        ),
        [("mechanism", "bahdanau")],
        ["attention_layer"],
    ),
}


def build_form(name):
    """The decoder of a form with tfa's weights, and the form's arrays."""
    common = load("wrapper")
    form = load("wrapper", name)
    kwargs, mechanisms, layers = FORMS[name]
    kwargs = dict(kwargs)
    count = kwargs.pop("layers", 1)
    kind = kwargs.pop("cell", "lstm")
    cell_class = keras.layers.GRUCell if kind == "gru" else keras.layers.LSTMCell
    cell = [cell_class(6) for _ in range(count)] if count > 1 else kind
    kwargs["attention"] = kwargs["attention"]()
    if "attention_layer" in kwargs:
        kwargs["attention_layer"] = kwargs["attention_layer"]()
    decoder = AttentionDecoder(6, cell=cell, query="current", **kwargs)
    inputs, memory = common["inputs"], common["memory"]
    decoder.build(inputs.shape, memory.shape)
    cells = ["cell0", "cell1"] if count > 1 else ["cell"]
    set_tfa_weights(decoder, as_tfa_port(form, cells, mechanisms, layers))
    return decoder, form, common


def initial_cell_states(form, prefix="initial_state"):
    if f"{prefix}/0/h" in form:  # a stack
        return [form[f"{prefix}/{i}/{s}"] for i in (0, 1) for s in ("h", "c")]
    return [form[f"{prefix}/h"]] + (
        [form[f"{prefix}/c"]] if f"{prefix}/c" in form else []
    )


def memory_mask(common):
    lengths = common["memory_sequence_length"]
    return np.arange(common["memory"].shape[1])[None, :] < lengths[:, None]


def assert_close(got, want, what):
    np.testing.assert_allclose(np_(got), want, atol=TOLERANCE, err_msg=what)


@pytest.mark.parametrize("name", list(FORMS))
def test_attention_wrapper_forms_match_tfa(name):
    decoder, form, common = build_form(name)
    mask = memory_mask(common)
    states = initial_cell_states(form)
    # The whole sequence (teacher forcing: tfa's TrainingSampler).
    outputs, alignments = decoder(
        common["inputs"], common["memory"], initial_state=states, memory_mask=mask
    )
    assert_close(outputs, form["outputs"], "outputs")
    want = (
        [form["alignments0"], form["alignments1"]]
        if name == "multi"
        else [form["alignments"]]
    )
    got = alignments if isinstance(alignments, list) else [alignments]
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, "alignments")
    # Step by step, with the state tfa carries: its attention vector and final state.
    memory = decoder.prepare_memory(common["memory"], mask)
    step_states = decoder.get_initial_state(common["inputs"].shape[0], states)
    for t in range(common["inputs"].shape[1]):
        out, step_states, _ = decoder.step(common["inputs"][:, t], step_states, memory)
        assert_close(out, form["outputs"][:, t], f"step {t} output")
        assert_close(step_states[-1], form["attentions"][:, t], f"step {t} attention")
    for got_state, want_state in zip(
        step_states[:-1], initial_cell_states(form, "final_state"), strict=True
    ):
        assert_close(got_state, want_state, "final cell state")


def test_hardmax_wrapper_matches_tfa():
    # tfa's LuongAttention(probability_fn="hardmax") in an AttentionWrapper.
    form = load("wrapper", "hardmax")
    common = load("wrapper")
    decoder = AttentionDecoder(
        6,
        cell="lstm",
        attention=luong(probability_fn="hardmax"),
        query="current",
        attention_layer_size=4,
        attention_activation=None,
    )
    decoder.build(common["inputs"].shape, common["memory"].shape)
    set_tfa_weights(
        decoder,
        as_tfa_port(form, ["cell"], [("mechanism", "luong")], ["attention_layer"]),
    )
    outputs, alignments = decoder(
        common["inputs"],
        common["memory"],
        initial_state=initial_cell_states(form),
        memory_mask=memory_mask(common),
    )
    assert_close(outputs, form["outputs"], "outputs")
    assert_close(alignments, form["alignments"], "alignments")


class PortedModel:
    """port.npz's tfa model rebuilt from keras-rnnattn and Keras layers."""

    def __init__(self):
        weights = load("port")
        self.weights = weights
        self.source_embedding = keras.layers.Embedding(14, 16, mask_zero=True)
        self.encoder = keras.layers.LSTM(32, return_sequences=True, return_state=True)
        self.target_embedding = keras.layers.Embedding(14, 16)
        self.decoder = AttentionDecoder(
            32,
            cell="lstm",
            attention=luong(),
            query="current",
            attention_layer_size=32,
            attention_activation=None,
        )
        self.output_layer = keras.layers.Dense(14)
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        self.encoder.build((None, None, 16))
        self.decoder.build((None, None, 16), (None, None, 32))
        self.output_layer.build((None, 32))
        self.source_embedding.set_weights([weights["encoder_embedding"]])
        self.target_embedding.set_weights([weights["decoder_embedding"]])
        self.encoder.set_weights(
            [weights[f"encoder/{w}"] for w in ("kernel", "recurrent_kernel", "bias")]
        )
        self.output_layer.set_weights(
            [weights["output/kernel"], weights["output/bias"]]
        )
        set_tfa_weights(
            self.decoder,
            as_tfa_port(
                weights, ["cell"], [("mechanism", "luong")], ["attention_layer"]
            ),
        )

    def initial_state(self, sources):
        mask = ops.not_equal(sources, 0)
        memory, h, c = self.encoder(self.source_embedding(sources), mask=mask)
        return {
            "states": self.decoder.get_initial_state(ops.shape(sources)[0], [h, c]),
            "memory": self.decoder.prepare_memory(memory, mask),
        }

    def next_fn(self, token_ids, state):
        out, states, alignment = self.decoder.step(
            self.target_embedding(token_ids), state["states"], state["memory"]
        )
        logits = self.output_layer(out)
        return logits, {"states": states, "memory": state["memory"]}, alignment


@pytest.fixture(scope="module")
def ported():
    return PortedModel()


def test_a_trained_tfa_model_ported_translates_the_same_greedily(ported):
    weights = ported.weights
    sources = weights["sources"]
    start = np.full((len(sources),), 1, "int32")
    tokens, scores = greedy_search(
        ported.next_fn, ported.initial_state(sources), start, 2, max_length=10
    )
    np.testing.assert_array_equal(np_(tokens), weights["greedy/tokens"])
    np.testing.assert_allclose(np_(scores), weights["greedy/scores"], atol=1e-4)
    # It learned the task (tfa's model reversed every held-out source).
    assert weights["greedy/exact_match"].all()


def test_a_trained_tfa_model_ported_finds_tfas_best_beam(ported):
    weights = ported.weights
    sources = weights["sources"]
    start = np.full((len(sources),), 1, "int32")
    tokens, scores = beam_search(
        ported.next_fn,
        ported.initial_state(sources),
        start,
        2,
        max_length=10,
        beam_size=3,
    )
    # A trained model: both searches find the same best sequence, same log-prob.
    np.testing.assert_array_equal(np_(tokens)[:, 0], weights["beam/sequences"][:, 0])
    np.testing.assert_allclose(
        np_(scores)[:, 0], weights["beam/log_probs"][:, 0], atol=1e-4
    )
