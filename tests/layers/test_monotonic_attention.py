"""`BahdanauMonotonicAttention` and `LuongMonotonicAttention`: the formulas, the
noise, the masks, the layer contract and the decoding loops."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import beam_search, greedy_search
from keras_rnnattn.layers import (
    AttentionDecoder,
    BahdanauMonotonicAttention,
    LuongMonotonicAttention,
)
from tests.layer_test_utils import run_layer_test, to_numpy

rng = np.random.default_rng(8)
B, S, DQ, DV = 3, 6, 5, 4
QUERY = rng.normal(size=(B, DQ)).astype("float32")
VALUE = rng.normal(size=(B, S, DV)).astype("float32")
MASK = np.arange(S)[None, :] < np.array([[6], [4], [2]])
PREVIOUS = rng.dirichlet(np.ones(S), size=B).astype("float32")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def chain(p, previous):
    """q_j = (1 - p_{j-1}) q_{j-1} + a_j; attention_j = p_j q_j."""
    out = np.zeros_like(p)
    for b in range(p.shape[0]):
        q = 0.0
        for j in range(p.shape[1]):
            q = (1 - p[b, j - 1]) * q + previous[b, j] if j else previous[b, 0]
            out[b, j] = p[b, j] * q
    return out


def bahdanau_scores(layer):
    w_q, w_k = to_numpy(layer.query_dense.kernel), to_numpy(layer.key_dense.kernel)
    v, b = to_numpy(layer.v), to_numpy(layer.b)
    if layer.normalize:
        v = to_numpy(layer.g) * v / np.linalg.norm(v)
    hidden = np.tanh((QUERY @ w_q + b)[:, None] + VALUE @ w_k)  # (B, S, units)
    return hidden @ v + to_numpy(layer.score_bias)


def luong_scores(layer):
    scores = np.einsum("bd,bsd->bs", QUERY, VALUE @ to_numpy(layer.key_dense.kernel))
    if layer.scale:
        scores = to_numpy(layer.g) * scores
    return scores + to_numpy(layer.score_bias)


CASES = [
    (lambda **kw: BahdanauMonotonicAttention(3, **kw), bahdanau_scores),
    (lambda **kw: BahdanauMonotonicAttention(3, normalize=True, **kw), bahdanau_scores),
    (lambda **kw: LuongMonotonicAttention(**kw), luong_scores),
    (lambda **kw: LuongMonotonicAttention(scale=True, **kw), luong_scores),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("mode", ["parallel", "recursive", "hard"])
def test_matches_the_papers_formula(case, mode):
    make, scores_of = CASES[case]
    layer = make(mode=mode, score_bias_init=-0.3)
    layer(QUERY, VALUE, value_mask=MASK)
    # Non-trivial learned scalars.
    layer.score_bias.assign(0.4)
    if getattr(layer, "g", None) is not None:
        layer.g.assign(1.7)
    previous = PREVIOUS
    if mode == "hard":
        previous = np.eye(S, dtype="float32")[[0, 2, 1]]
    context, weights = layer(
        QUERY,
        VALUE,
        value_mask=MASK,
        previous_alignment=previous,
        return_attention_scores=True,
    )
    scores = scores_of(layer)
    p = (scores > 0).astype("float32") if mode == "hard" else sigmoid(scores)
    want = chain(np.where(MASK, p, 0.0), previous)
    np.testing.assert_allclose(to_numpy(weights), want, atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(context), np.einsum("bs,bsd->bd", want, VALUE), atol=1e-5
    )
    assert (to_numpy(weights)[~MASK] == 0).all()


def test_the_state_starts_on_the_first_position_and_is_the_weights():
    layer = LuongMonotonicAttention()
    first = to_numpy(layer.initial_alignment(2, 4))
    np.testing.assert_array_equal(first, [[1, 0, 0, 0], [1, 0, 0, 0]])
    # No previous alignment given: the first step starts from there.
    _, weights = layer(QUERY, VALUE, return_attention_scores=True)
    _, explicit = layer(
        QUERY,
        VALUE,
        previous_alignment=layer.initial_alignment(B, S),
        return_attention_scores=True,
    )
    np.testing.assert_allclose(to_numpy(weights), to_numpy(explicit), atol=1e-7)
    assert layer.next_alignment_state(weights, PREVIOUS) is weights
    assert layer.stateful


@pytest.mark.parametrize("mode", ["parallel", "hard"])
def test_noise_is_applied_only_in_training(mode):
    layer = BahdanauMonotonicAttention(3, sigmoid_noise=2.0, mode=mode, seed=4)
    quiet = BahdanauMonotonicAttention(3, mode=mode)
    inference = to_numpy(layer(QUERY, VALUE, return_attention_scores=True)[1])
    quiet(QUERY, VALUE)
    quiet.set_weights(layer.get_weights())
    no_noise = to_numpy(quiet(QUERY, VALUE, return_attention_scores=True)[1])
    np.testing.assert_allclose(inference, no_noise, atol=1e-7)
    again = layer(QUERY, VALUE, training=False, return_attention_scores=True)[1]
    np.testing.assert_allclose(to_numpy(again), inference, atol=1e-7)
    trained = [
        to_numpy(layer(QUERY, VALUE, training=True, return_attention_scores=True)[1])
        for _ in range(5)
    ]
    changed = [np.abs(t - inference).max() > 1e-3 for t in trained]
    if mode == "hard":  # discrete: a draw may keep the decisions
        assert any(changed)
    else:
        assert all(changed)
        assert np.abs(trained[0] - trained[1]).max() > 1e-3  # fresh noise
    # Without noise, training changes nothing.
    quiet_trained = quiet(QUERY, VALUE, training=True, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(quiet_trained[1]), no_noise, atol=1e-7)


@pytest.mark.parametrize(
    "layer_cls, init_kwargs",
    [
        (
            BahdanauMonotonicAttention,
            {"units": 4, "normalize": True, "sigmoid_noise": 1.0, "seed": 2},
        ),
        (
            LuongMonotonicAttention,
            {"scale": True, "score_bias_init": -1.0, "mode": "recursive", "units": 5},
        ),
    ],
)
def test_layer_contract(layer_cls, init_kwargs, tmp_path):
    run_layer_test(
        layer_cls,
        init_kwargs,
        {"query": QUERY, "value": VALUE, "value_mask": MASK},
        {"return_attention_scores": True},
        expected_output_shapes=[(B, DV), (B, S)],
        tmp_path=tmp_path,
    )
    config = layer_cls(**init_kwargs).get_config()
    assert "probability_fn" not in config
    for key, value in init_kwargs.items():
        assert config[key] == value


def test_the_luong_initialiser_and_scale_are_tfas():
    layer = LuongMonotonicAttention(scale=True, score_bias_init=-2.5)
    layer(QUERY, VALUE)
    assert float(to_numpy(layer.g)) == 1.0  # learned, not 1/sqrt(depth)
    assert float(to_numpy(layer.score_bias)) == -2.5
    assert not hasattr(LuongMonotonicAttention(), "g")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="Received: mode='soft'"):
        LuongMonotonicAttention(mode="soft")
    with pytest.raises(ValueError, match="sigmoid_noise=-1"):
        BahdanauMonotonicAttention(3, sigmoid_noise=-1)
    with pytest.raises(ValueError, match="probability_fn='hardmax'"):
        BahdanauMonotonicAttention(3, probability_fn="hardmax")
    with pytest.raises(ValueError, match="one decoder step at a time"):
        LuongMonotonicAttention()(VALUE, VALUE)
    with pytest.raises(ValueError, match="pass `units`"):
        LuongMonotonicAttention().precompute_keys(VALUE)


def hard_decoder(cls=LuongMonotonicAttention, **kwargs):
    keras.utils.set_random_seed(1)
    decoder = AttentionDecoder(
        DV,
        cell="gru",
        attention=cls(mode="hard", score_bias_init=0.5, **kwargs),
        query="current",
    )
    decoder(np.zeros((B, 2, 3), "float32"), VALUE, memory_mask=MASK)
    return decoder


def test_hard_decoding_moves_forward_only():
    # Greedy and beam search carry the hard alignment: one-hot (or zero once
    # past the end) and never moving back; beam size 1 is greedy search.
    decoder = hard_decoder()
    embedding = rng.normal(size=(7, 3)).astype("float32")
    out_kernel = rng.normal(size=(DV, 7)).astype("float32")

    def next_fn(tokens, state):
        x = ops.take(embedding, tokens, axis=0)
        out, states, alignment = decoder.step(x, state["states"], state["memory"])
        return ops.matmul(out, out_kernel), {**state, "states": states}, alignment

    memory = decoder.prepare_memory(VALUE, MASK)
    state = {"states": decoder.get_initial_state(B, memory=memory), "memory": memory}
    start = np.zeros((B,), "int32")
    tokens, _, alignments = greedy_search(
        next_fn, state, start, 6, 6, return_alignments=True
    )
    alignments = to_numpy(alignments)  # (B, L, S)
    assert set(np.unique(alignments)) <= {0.0, 1.0}
    assert (alignments[~np.broadcast_to(MASK[:, None], alignments.shape)] == 0).all()
    position = np.where(alignments.sum(-1) > 0, alignments.argmax(-1), S)
    assert (np.diff(position, axis=1) >= 0).all()
    beam = beam_search(next_fn, state, start, 6, 6, beam_size=1)
    np.testing.assert_array_equal(to_numpy(beam[0])[:, 0], to_numpy(tokens))


@pytest.mark.parametrize("noise", ["sigmoid_noise", "dropout"])
def test_noise_trains_through_the_decoder_scan(noise):
    # The scan draws every step's noise before the loop: `fit` compiles it on
    # JAX too (a draw from a SeedGenerator inside the body would not trace).
    keras.utils.set_random_seed(2)
    x = rng.normal(size=(8, 4, 3)).astype("float32")
    memory = rng.normal(size=(8, S, DV)).astype("float32")
    decoder = AttentionDecoder(
        6,
        cell="gru",
        attention=LuongMonotonicAttention(**{noise: 0.5}, seed=1),
        query="current",
    )
    inputs, source = keras.Input((4, 3)), keras.Input((S, DV))
    model = keras.Model([inputs, source], decoder(inputs, source)[0])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit([x, memory], np.zeros((8, 4, 6)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    quiet = to_numpy(decoder(x, memory)[1])
    noisy = to_numpy(ops.stop_gradient(decoder(x, memory, training=True)[1]))
    assert np.abs(noisy - quiet).max() > 1e-3
