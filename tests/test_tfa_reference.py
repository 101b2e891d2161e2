"""keras_rnnattn against values computed by tensorflow-addons 0.23.0 itself.

The fixtures in `tests/fixtures/tfa/` were written by `scripts/tfa_reference.py`
(tfa's inputs, weights and outputs); tfa is never imported here. Covered: the
scorers with tfa's weights mapped onto keras_rnnattn's, and greedy and beam
search over a `next_fn` that redoes tfa's `AttentionWrapper` decoding model in
keras.ops (`tests/tfa_reference_utils.py`, itself checked against tfa's
step-by-step wrapper outputs).
"""

import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search
from keras_rnnattn.layers import BahdanauAttention, LuongAttention
from tests.tfa_reference_utils import (
    LuongDecoderModel,
    TfaMechanism,
    gnmt_length_penalty,
    gru_cell,
    hypothesis_length,
    lengths_to_mask,
    load_fixture,
    lstm_cell,
    lstm_encode,
    sequence_log_prob,
    to_tensors,
    wrapper_step,
)

ATOL = 1e-5


def to_numpy(x):
    return ops.convert_to_numpy(x)


# Scorers: tfa's weights in keras_rnnattn's layers.


def project_scorer(name, weights, query, memory, mask, **kwargs):
    """The keras_rnnattn layer holding tfa mechanism `name`'s weights.

    Mapping: Bahdanau `query_layer`/`memory_layer` kernels -> `query_dense` /
    `key_dense`, `attention_v` -> `v`, `attention_g`/`attention_b` -> `g`/`b`
    (b stays 0 without `normalize`, as tfa has none). Luong `memory_layer` ->
    `key_dense` of `score="general"`; tfa's learned scale `attention_g` (g ·
    qᵀWk) is folded into that kernel, qᵀ(gW)k, with `scale=False`:
    keras_rnnattn's `scale=True` is a fixed 1/√d, not tfa's scale.
    """
    if name.startswith("bahdanau"):
        normalize = "attention_b" in weights
        layer = BahdanauAttention(units=4, normalize=normalize, **kwargs)
        layer(query, memory, value_mask=mask)  # builds the weights
        layer.query_dense.kernel.assign(weights["query_kernel"])
        layer.key_dense.kernel.assign(weights["memory_kernel"])
        layer.v.assign(weights["attention_v"])
        if normalize:
            layer.g.assign(weights["attention_g"])
            layer.b.assign(weights["attention_b"])
    else:
        layer = LuongAttention(score="general", units=6, **kwargs)
        layer(query, memory, value_mask=mask)
        kernel = weights["memory_kernel"]
        if "attention_g" in weights:
            kernel = kernel * weights["attention_g"]
        layer.key_dense.kernel.assign(kernel)
    return layer


def check_scorer(name, **kwargs):
    data = load_fixture("scorers")
    weights = load_fixture("scorers", name)
    memory, query = data["memory"], data["query"]  # (B, S, D), (B, T, dq)
    mask = lengths_to_mask(data["memory_sequence_length"], memory.shape[1])
    layer = project_scorer(name, weights, query, memory, mask, **kwargs)
    context, alignments = layer(
        query, memory, value_mask=mask, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(alignments), weights["alignments"], atol=ATOL)
    np.testing.assert_allclose(to_numpy(context), weights["context"], atol=ATOL)
    return weights


@pytest.mark.parametrize(
    "name", ["bahdanau", "bahdanau_normalized", "luong", "luong_scaled"]
)
def test_scorer_alignments_match_tfa(name):
    weights = check_scorer(name)
    # The fixture is not trivial: the masked tail has weight 0 and the real
    # positions share the rest.
    alignments = weights["alignments"]
    assert np.all(alignments[1, :, 4:] == 0.0)
    assert np.all(alignments.max(-1) < 0.999)
    if "attention_g" in weights:
        assert abs(float(weights["attention_g"]) - 1.0) > 0.1  # folding g matters


@pytest.mark.parametrize(
    "name",
    ["bahdanau_hardmax", "luong_hardmax", "bahdanau_sparsemax", "luong_sparsemax"],
)
def test_scorer_probability_fn_matches_tfa(name):
    probability_fn = name.rsplit("_", 1)[1]
    weights = check_scorer(name, probability_fn=probability_fn)
    alignments = weights["alignments"]
    if probability_fn == "sparsemax":
        # Sparse rows that are not all one-hot.
        assert np.any((alignments > 0.0) & (alignments < 0.99))
        assert np.sum(alignments == 0.0) > alignments.size // 3


@pytest.mark.parametrize(
    "name",
    [
        "bahdanau",
        "bahdanau_normalized",
        "luong",
        "luong_scaled",
        "bahdanau_hardmax",
        "luong_hardmax",
    ],
)
def test_reference_mechanism_math_matches_tfa(name):
    data = load_fixture("scorers")
    weights = load_fixture("scorers", name)
    probability_fn = "hardmax" if name.endswith("hardmax") else "softmax"
    mechanism = TfaMechanism(
        {
            k: v
            for k, v in weights.items()
            if k not in ("alignments", "context", "score")
        },
        probability_fn,
    )
    memory = ops.convert_to_tensor(data["memory"])
    mask = ops.convert_to_tensor(
        lengths_to_mask(data["memory_sequence_length"], memory.shape[1])
    )
    keys = mechanism.keys(memory, mask)
    for t in range(data["query"].shape[1]):
        query = ops.convert_to_tensor(data["query"][:, t])
        np.testing.assert_allclose(
            to_numpy(mechanism.scores(query, keys)), weights["score"][:, t], atol=ATOL
        )
        np.testing.assert_allclose(
            to_numpy(mechanism.alignments(query, keys, mask)),
            weights["alignments"][:, t],
            atol=ATOL,
        )


# tfa's AttentionWrapper forms, redone by tests/tfa_reference_utils.py.

WRAPPER_FORMS = [
    "default",
    "linear",
    "tanh_layer",
    "no_output_attention",
    "stacked",
    "multi",
    "gru_bahdanau",
    "hardmax",
]


def reference_wrapper(form, w):
    """cell_fn, mechanisms, attention layers and initial cell state of a form."""
    t = to_tensors(w)

    def cell_weights(prefix):
        return (
            t[prefix + "kernel"],
            t[prefix + "recurrent_kernel"],
            t[prefix + "bias"],
        )

    if form == "stacked":

        def cell_fn(x, state):
            (h0, c0), (h1, c1) = state
            h0, c0 = lstm_cell(x, h0, c0, *cell_weights("cell0/"))
            h1, c1 = lstm_cell(h0, h1, c1, *cell_weights("cell1/"))
            return h1, ((h0, c0), (h1, c1))

        state = tuple(
            (t[f"initial_state/{i}/h"], t[f"initial_state/{i}/c"]) for i in (0, 1)
        )
    elif form == "gru_bahdanau":

        def cell_fn(x, h):
            h = gru_cell(x, h, *cell_weights("cell/"))
            return h, h

        state = t["initial_state/h"]
    else:

        def cell_fn(x, state):
            h, c = lstm_cell(x, *state, *cell_weights("cell/"))
            return h, (h, c)

        state = (t["initial_state/h"], t["initial_state/c"])

    def mechanism_weights(prefix):
        return {k[len(prefix) :]: v for k, v in w.items() if k.startswith(prefix)}

    if form == "multi":
        mechanisms = [
            TfaMechanism(mechanism_weights("mechanism0/")),
            TfaMechanism(mechanism_weights("mechanism1/")),
        ]
        kernels = [t["attention_layer0/kernel"], t["attention_layer1/kernel"]]
    else:
        probability_fn = "hardmax" if form == "hardmax" else "softmax"
        mechanisms = [TfaMechanism(mechanism_weights("mechanism/"), probability_fn)]
        kernels = None if form == "default" else [t["attention_layer/kernel"]]
    layers = None
    if kernels is not None:
        activation = ops.tanh if form == "tanh_layer" else (lambda x: x)
        layers = [lambda x, k=k: activation(ops.matmul(x, k)) for k in kernels]
    return cell_fn, mechanisms, layers, state


@pytest.mark.parametrize("form", WRAPPER_FORMS)
def test_reference_wrapper_step_matches_tfa(form):
    data = load_fixture("wrapper")
    w = load_fixture("wrapper", form)
    cell_fn, mechanisms, layers, state = reference_wrapper(form, w)
    memory = ops.convert_to_tensor(data["memory"])
    mask = ops.convert_to_tensor(
        lengths_to_mask(data["memory_sequence_length"], memory.shape[1])
    )
    keys = [m.keys(memory, mask) for m in mechanisms]
    attention = ops.convert_to_tensor(w["initial_attention"])
    for t in range(data["inputs"].shape[1]):
        output, state, attention, alignments = wrapper_step(
            cell_fn,
            mechanisms,
            layers,
            ops.convert_to_tensor(data["inputs"][:, t]),
            state,
            attention,
            memory,
            keys,
            mask,
            output_attention=form != "no_output_attention",
        )
        np.testing.assert_allclose(to_numpy(output), w["outputs"][:, t], atol=ATOL)
        np.testing.assert_allclose(
            to_numpy(attention), w["attentions"][:, t], atol=ATOL
        )
        names = ["alignments0", "alignments1"] if form == "multi" else ["alignments"]
        for name, alignment in zip(names, alignments):
            np.testing.assert_allclose(to_numpy(alignment), w[name][:, t], atol=ATOL)
    np.testing.assert_allclose(to_numpy(attention), w["final_attention"], atol=ATOL)
    if form == "stacked":
        finals = {
            f"final_state/{i}/{n}": state[i][j]
            for i in (0, 1)
            for j, n in enumerate("hc")
        }
    elif form == "gru_bahdanau":
        finals = {"final_state/h": state}
    else:
        finals = {"final_state/h": state[0], "final_state/c": state[1]}
    for key, value in finals.items():
        np.testing.assert_allclose(to_numpy(value), w[key], atol=ATOL)


# Greedy and beam search over tfa's decoding model.


def decoding_model():
    data = load_fixture("decoding")
    model = LuongDecoderModel(data)
    state = model.initial_state(
        data["memory"],
        data["memory_sequence_length"],
        data["initial_state/h"],
        data["initial_state/c"],
    )
    return data, model, state


def test_reference_next_fn_reproduces_tfa_logits():
    data, model, state = decoding_model()
    ids = data["greedy/sample_ids_raw"]  # (B, T') what tfa fed back
    previous = ops.convert_to_tensor(data["start_ids"])
    for t in range(ids.shape[1]):
        logits, state, _ = model.next_fn(previous, state)
        # Logits reach |14|: float32 rounding of the matmuls, relative.
        np.testing.assert_allclose(
            to_numpy(logits), data["greedy/logits"][:, t], rtol=1e-5, atol=ATOL
        )
        previous = ops.convert_to_tensor(ids[:, t])


def test_greedy_search_matches_tfa():
    data, model, state = decoding_model()
    tokens, scores = greedy_search(
        model.next_fn,
        state,
        data["start_ids"],
        int(data["end_id"]),
        int(data["max_length"]),
    )
    expected = data["greedy/tokens"]
    # Not trivial: varied tokens, one row ends early, the others never do.
    ends = np.any(expected == 2, axis=1)
    assert ends.any() and not ends.all()
    assert len(np.unique(expected)) >= 4
    np.testing.assert_array_equal(to_numpy(tokens), expected)
    np.testing.assert_allclose(to_numpy(scores), data["greedy/scores"], atol=ATOL)
    # tfa's final lengths count the end token, as the rows' |Y| does here.
    np.testing.assert_array_equal(
        hypothesis_length(expected, 2), data["greedy/sequence_lengths"]
    )


@pytest.mark.parametrize("group, alpha", [("beam", 0.0), ("beam_lp06", 0.6)])
def test_beam_search_matches_or_beats_tfa(group, alpha):
    data, model, state = decoding_model()
    beam = load_fixture("decoding", group)
    end_id, max_length = int(data["end_id"]), int(data["max_length"])
    tokens, scores = beam_search(
        model.next_fn,
        state,
        data["start_ids"],
        end_id,
        max_length,
        beam_size=3,
        length_penalty=alpha,
        num_return_sequences=3,
    )
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    # tfa's score of its best beam, from the final state: its `lengths` count
    # the end token, like keras_rnnattn's |Y|, so log_probs / lp(lengths) is
    # the GNMT score both define. (While searching, tfa ranks a hypothesis at
    # the step that ends it with the end token not yet counted, the
    # `lengths_to_add` of `_beam_search_step`, and counts it from the next step
    # on: the last step's `scores` differ from this for a beam that ended at
    # that step. The final state's numbers do not.)
    log_probs, lengths = beam["log_probs"], beam["lengths"]
    tfa_best = beam["sequences"][:, 0]  # (B, L)
    np.testing.assert_array_equal(hypothesis_length(tfa_best, end_id), lengths[:, 0])
    # tfa's log-probabilities agree with the reference model's, teacher-forced.
    np.testing.assert_allclose(
        sequence_log_prob(model.next_fn, state, data["start_ids"], tfa_best, end_id),
        log_probs[:, 0],
        atol=ATOL,
    )
    tfa_scores = log_probs[:, 0] / gnmt_length_penalty(lengths[:, 0], alpha)
    np.testing.assert_allclose(tfa_scores, beam["scores"][:, 0], atol=ATOL)
    # keras_rnnattn's own scores are its hypotheses' GNMT scores.
    best = tokens[:, 0]
    own = sequence_log_prob(model.next_fn, state, data["start_ids"], best, end_id)
    own = own / gnmt_length_penalty(hypothesis_length(best, end_id), alpha)
    np.testing.assert_allclose(scores[:, 0], own, atol=ATOL)
    same = np.all(best == tfa_best, axis=1)
    for row in range(best.shape[0]):
        if same[row]:
            np.testing.assert_allclose(scores[row, 0], tfa_scores[row], atol=ATOL)
        else:
            # keras_rnnattn keeps finished hypotheses in a pool; tfa may drop
            # them from its beam. keras_rnnattn's best is then at least as good.
            assert scores[row, 0] >= tfa_scores[row] - ATOL
    # Both branches run: the fixture has rows where the searches agree and
    # rows where tfa's beam dropped a better finished hypothesis (row 0 at
    # alpha 0: [2] with log-probability -2.87 against tfa's -7.25).
    assert same.any() and not same.all()


# The trained tfa model of port.npz, with the reference encoder and decoder.


def port_model():
    data = load_fixture("port")
    w = to_tensors(data)
    sources, lengths = data["sources"], data["source_lengths"]
    mask = ops.convert_to_tensor(lengths_to_mask(lengths, sources.shape[1]))
    embedded = ops.take(w["encoder_embedding"], ops.convert_to_tensor(sources), axis=0)
    memory, h, c = lstm_encode(
        embedded,
        mask,
        w["encoder/kernel"],
        w["encoder/recurrent_kernel"],
        w["encoder/bias"],
    )
    model = LuongDecoderModel(data, embedding_key="decoder_embedding")
    state = model.initial_state(memory, lengths, h, c)
    return data, model, state


def test_port_greedy_and_beam_match_tfa():
    data, model, state = port_model()
    start_ids = np.full(len(data["sources"]), 1, dtype="int32")
    tokens, scores = greedy_search(model.next_fn, state, start_ids, 2, 10)
    np.testing.assert_array_equal(to_numpy(tokens), data["greedy/tokens"])
    np.testing.assert_allclose(to_numpy(scores), data["greedy/scores"], atol=ATOL)
    assert data["greedy/exact_match"].all()  # a trained model: reversal learned
    beam_tokens, beam_scores = beam_search(
        model.next_fn, state, start_ids, 2, 10, beam_size=3
    )
    beam_tokens, beam_scores = to_numpy(beam_tokens), to_numpy(beam_scores)
    np.testing.assert_array_equal(beam_tokens[:, 0], data["beam/sequences"][:, 0])
    np.testing.assert_allclose(
        beam_scores[:, 0], data["beam/log_probs"][:, 0], atol=ATOL
    )


def test_fixtures_hold_float32_and_int32_only():
    for name in ("scorers", "wrapper", "decoding", "port"):
        for key, value in load_fixture(name).items():
            assert value.dtype in (np.float32, np.int32, np.bool_), (name, key)
