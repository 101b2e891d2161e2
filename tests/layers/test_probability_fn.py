"""`probability_fn` of the scorers, and `ops.hardmax` / `ops.sparsemax` against NumPy."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import BahdanauAttention, LuongAttention
from keras_rnnattn.ops import hardmax, masked_softmax, sparsemax
from tests.layer_test_utils import run_layer_test, to_numpy

NAMES = ("softmax", "hardmax", "sparsemax")


@keras.saving.register_keras_serializable(package="test_probability_fn")
def squashed(scores, mask):
    """A registered `(scores, mask) -> weights`: sigmoids normalised over S."""
    weights = ops.sigmoid(scores)
    if mask is not None:
        weights = weights * ops.cast(mask, weights.dtype)
    return weights / (ops.sum(weights, axis=-1, keepdims=True) + 1e-6)


# NumPy references.


def np_sparsemax_row(z):
    """Martins and Astudillo (2016), Algorithm 1, on one vector."""
    z_sorted = np.sort(z)[::-1]
    k = np.arange(1, len(z) + 1)
    cumsum = np.cumsum(z_sorted)
    k_z = k[1 + k * z_sorted > cumsum].max()
    tau = (cumsum[k_z - 1] - 1) / k_z
    return np.maximum(z - tau, 0)


def np_masked(row_fn, scores, mask):
    """`row_fn` over the last axis of `scores`, on each row's unmasked entries only."""
    mask = np.broadcast_to(
        np.ones(scores.shape, bool) if mask is None else mask, scores.shape
    )
    out = np.zeros(scores.shape, np.float64)
    for index in np.ndindex(scores.shape[:-1]):
        keep = mask[index]
        if keep.any():
            out[index + (keep,)] = row_fn(scores[index][keep].astype(np.float64))
    return out


def np_hardmax_row(z):
    return np.eye(len(z))[np.argmax(z)]  # np.argmax: the first maximum


def random_mask(rng, shape):
    mask = rng.random(shape) < 0.7
    mask[0, 0] = False  # one all-masked row
    mask[0, 1] = True  # one row with nothing masked
    return mask


# ops.sparsemax and ops.hardmax.


@pytest.mark.parametrize("masked", [False, True])
def test_sparsemax_is_the_papers_algorithm(masked):
    rng = np.random.default_rng(0)
    scores = (rng.normal(size=(4, 3, 9)) * 1.5).astype("float32")
    mask = random_mask(rng, scores.shape) if masked else None
    got = to_numpy(sparsemax(scores, mask))
    want = np_masked(np_sparsemax_row, scores, mask)
    np.testing.assert_allclose(got, want, atol=2e-6)
    # Sparse: exact zeros among the unmasked entries, in most rows.
    keep = np.ones(scores.shape, bool) if mask is None else mask
    assert np.sum((got == 0) & keep) > 0.3 * keep.sum()
    # A distribution over the unmasked entries; an all-masked row is all zero.
    sums = got.sum(-1)
    rows = keep.any(-1)
    np.testing.assert_allclose(sums[rows], 1.0, atol=1e-6)
    if masked:
        assert np.all(got[~keep] == 0.0)
        np.testing.assert_array_equal(got[0, 0], 0.0)
    assert np.all(got >= 0.0)


def test_sparsemax_supports_of_every_size():
    # Closely spaced scores put several entries in the support (where Keras 3.15's
    # `ops.sparsemax` does not sum to 1).
    scores = np.array(
        [[0.0, 0.5, 1.0], [0.1, 0.2, 0.3], [0.5, 0.4, 0.1], [5.0, 0.0, 0.0]],
        "float32",
    )
    want = np.array(
        [
            [0.0, 0.25, 0.75],
            [0.2333333, 0.3333333, 0.4333333],
            [0.5, 0.4, 0.1],
            [1, 0, 0],
        ]
    )
    np.testing.assert_allclose(to_numpy(sparsemax(scores)), want, atol=1e-6)


def test_sparsemax_masked_entries_are_left_out_of_the_projection():
    # Zeroing after an unmasked projection would give [0, 0] + a masked 1.
    scores = np.array([[0.0, 0.5, 9.0]], "float32")
    mask = np.array([[True, True, False]])
    np.testing.assert_allclose(to_numpy(sparsemax(scores, mask)), [[0.25, 0.75, 0.0]])


def test_sparsemax_over_another_axis_and_in_half_precision():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(3, 6, 2)).astype("float32")
    mask = rng.random((3, 6, 1)) < 0.6  # broadcast over the last axis
    mask[0] = False
    got = to_numpy(sparsemax(scores, mask, axis=1))
    want = np_masked(
        np_sparsemax_row,
        np.moveaxis(scores, 1, -1),
        np.moveaxis(np.broadcast_to(mask, scores.shape), 1, -1),
    )
    np.testing.assert_allclose(got, np.moveaxis(want, -1, 1), atol=2e-6)
    for dtype in ("float16", "bfloat16"):
        half = sparsemax(ops.cast(scores, dtype), mask, axis=1)
        assert keras.backend.standardize_dtype(half.dtype) == dtype
        half = to_numpy(ops.cast(half, "float32"))
        assert np.all(np.isfinite(half))
        np.testing.assert_allclose(half, np.moveaxis(want, -1, 1), atol=3e-2)


@pytest.mark.parametrize("masked", [False, True])
def test_hardmax_is_one_hot_of_the_first_maximum(masked):
    rng = np.random.default_rng(2)
    # Integer scores: many ties, which must go to the lowest index.
    scores = rng.integers(0, 3, size=(4, 3, 8)).astype("float32")
    mask = random_mask(rng, scores.shape) if masked else None
    got = to_numpy(hardmax(scores, mask))
    keep = np.ones(scores.shape, bool) if mask is None else mask
    want = np.zeros(scores.shape)
    for index in np.ndindex(scores.shape[:-1]):
        if keep[index].any():
            masked_row = np.where(keep[index], scores[index], -np.inf)
            want[index + (np.argmax(masked_row),)] = 1.0
    np.testing.assert_array_equal(got, want)
    if masked:
        np.testing.assert_array_equal(got[0, 0], 0.0)


def test_hardmax_ties_and_masked_maxima():
    scores = np.array([[2.0, 5.0, 5.0, 5.0], [5.0, 5.0, 1.0, 5.0]], "float32")
    mask = np.array([[True, False, True, True], [True, True, True, True]])
    np.testing.assert_array_equal(
        to_numpy(hardmax(scores)), [[0, 1, 0, 0], [1, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        to_numpy(hardmax(scores, mask)), [[0, 0, 1, 0], [1, 0, 0, 0]]
    )


def gradient(fn, x):
    """d sum(fn(x)) / dx for a NumPy `x`, on the running backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        # One compiled program, not one per eager op of the backward pass.
        return np.asarray(jax.jit(jax.grad(lambda t: fn(t).sum()))(x))
    if backend == "torch":
        import torch

        t = torch.tensor(x, requires_grad=True)
        fn(t).sum().backward()
        return t.grad.numpy()
    import tensorflow as tf

    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        total = tf.reduce_sum(fn(t))
    return tape.gradient(total, t).numpy()


def test_sparsemax_gradient_is_the_papers():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(3, 2, 6)).astype("float32")
    mask = random_mask(rng, scores.shape)
    w = rng.normal(size=scores.shape).astype("float32")
    mask_t = ops.convert_to_tensor(mask)
    w_t = ops.convert_to_tensor(w)
    grad = gradient(lambda t: sparsemax(t, mask_t) * w_t, scores)
    assert np.all(np.isfinite(grad))
    # d(Σ_i w_i p_i)/dz_j = s_j (w_j - mean of w over the support S).
    p = np_masked(np_sparsemax_row, scores, mask)
    support = p > 0
    mean = np.sum(w * support, -1, keepdims=True) / np.maximum(
        support.sum(-1, keepdims=True), 1
    )
    np.testing.assert_allclose(grad, support * (w - mean), atol=1e-5)
    np.testing.assert_array_equal(grad[~mask], 0.0)


# The layers.


def scorers(probability_fn, **kwargs):
    return {
        "bahdanau": BahdanauAttention(4, probability_fn=probability_fn, **kwargs),
        "luong_general": LuongAttention(
            "general", scale=True, probability_fn=probability_fn, **kwargs
        ),
    }


def layer_inputs(seed=4):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(3, 2, 5)).astype("float32") * 3
    value = rng.normal(size=(3, 6, 5)).astype("float32")
    value_mask = np.arange(6)[None, :] < np.array([6, 3, 0])[:, None]  # (3, 6)
    query_mask = np.array([[True, True], [True, False], [True, True]])
    return query, value, value_mask, query_mask


def reference(name):
    return {"softmax": masked_softmax, "hardmax": hardmax, "sparsemax": sparsemax}.get(
        name, name
    )


@pytest.mark.parametrize("probability_fn", [*NAMES, squashed])
def test_weights_and_context(probability_fn):
    query, value, value_mask, query_mask = layer_inputs()
    for label, layer in scorers(probability_fn).items():
        context, weights = layer(
            query,
            value,
            value_mask=value_mask,
            query_mask=query_mask,
            return_attention_scores=True,
        )
        context, weights = to_numpy(context), to_numpy(weights)
        # The weights are probability_fn of the scores, masked.
        scores = layer.compute_scores(query, layer.precompute_keys(value))
        want = to_numpy(reference(probability_fn)(scores, value_mask[:, None, :]))
        want = want * value_mask[:, None, :] * query_mask[:, :, None]
        np.testing.assert_allclose(weights, want, atol=1e-6, err_msg=label)
        np.testing.assert_array_equal(
            weights[~np.broadcast_to(value_mask[:, None], weights.shape)], 0.0
        )
        np.testing.assert_array_equal(weights[2], 0.0)  # all-masked source
        np.testing.assert_array_equal(weights[1, 1], 0.0)  # padded query
        # Rows with a real query and real keys are distributions.
        np.testing.assert_allclose(
            weights[[0, 0, 1], [0, 1, 0]].sum(-1), 1.0, atol=1e-5
        )
        # The context is weights @ value.
        np.testing.assert_allclose(context, weights @ value, atol=1e-5, err_msg=label)
    if probability_fn == "sparsemax":  # exact zeros among real keys
        assert np.sum(weights[0] == 0) >= 2


def test_default_is_the_masked_softmax_bit_for_bit():
    query, value, value_mask, _ = layer_inputs()
    default = LuongAttention("general")
    named = LuongAttention("general", probability_fn="softmax")
    named.build(query.shape, value.shape)
    default.build(query.shape, value.shape)
    named.set_weights(default.get_weights())
    ours = to_numpy(
        default(query, value, value_mask=value_mask, return_attention_scores=True)[1]
    )
    np.testing.assert_array_equal(
        ours,
        to_numpy(
            named(query, value, value_mask=value_mask, return_attention_scores=True)[1]
        ),
    )
    scores = default.compute_scores(query, default.precompute_keys(value))
    np.testing.assert_array_equal(
        ours, to_numpy(masked_softmax(scores, value_mask[:, None, :]))
    )
    assert default.get_config()["probability_fn"] == "softmax"


def test_a_callables_weights_are_masked():
    seen = {}

    def everywhere(scores, mask):
        seen["shapes"] = (tuple(scores.shape), tuple(mask.shape))
        seen["dtype"] = keras.backend.standardize_dtype(mask.dtype)
        # Weight at every position, NaN where masked: both must become 0.
        return ops.where(mask, ops.ones_like(scores), ops.full_like(scores, np.nan))

    query, value, value_mask, _ = layer_inputs()
    layer = LuongAttention("dot", probability_fn=everywhere)
    context, weights = layer(
        query, value, value_mask=value_mask, return_attention_scores=True
    )
    assert seen["shapes"] == ((3, 2, 6), (3, 1, 6)) and seen["dtype"] == "bool"
    weights = to_numpy(weights)
    np.testing.assert_array_equal(
        weights,
        np.broadcast_to(value_mask[:, None, :], weights.shape).astype("float32"),
    )
    assert np.all(np.isfinite(to_numpy(context)))
    # Without any mask the callable gets None and its weights are kept.
    got = to_numpy(
        LuongAttention(
            "dot", probability_fn=lambda s, m: ops.ones_like(s) * (m is None)
        )(query, value, return_attention_scores=True)[1]
    )
    np.testing.assert_array_equal(got, 1.0)


@pytest.mark.parametrize("probability_fn", NAMES)
def test_dropout_drops_weights(probability_fn):
    rng = np.random.default_rng(6)
    query = rng.normal(size=(4, 3, 6)).astype("float32")
    value = np.tile(np.eye(6, dtype="float32"), (4, 1, 1))  # context = dropped weights
    layer = LuongAttention("dot", dropout=0.5, seed=3, probability_fn=probability_fn)
    weights = to_numpy(layer(query, value, return_attention_scores=True)[1])
    context, same = layer(query, value, return_attention_scores=True, training=True)
    context = to_numpy(context)
    np.testing.assert_array_equal(to_numpy(same), weights)
    kept = np.isclose(context, weights / 0.5, atol=1e-6)
    dropped = context == 0.0
    assert np.all(kept | dropped)
    positive = weights > 0
    assert 0 < np.sum(dropped & positive) < positive.sum()


def test_sparsemax_scorer_passes_the_layer_checks(tmp_path):
    query, value, value_mask, _ = layer_inputs()
    run_layer_test(
        BahdanauAttention,
        {"units": 4, "probability_fn": "sparsemax"},
        {"query": query, "value": value, "value_mask": value_mask},
        call_kwargs={"return_attention_scores": True},
        expected_output_shapes=((3, 2, 5), (3, 2, 6)),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("probability_fn", ["max", "Softmax", 3, None, ["softmax"]])
def test_invalid_probability_fn(probability_fn):
    for make in (
        lambda: BahdanauAttention(4, probability_fn=probability_fn),
        lambda: LuongAttention(probability_fn=probability_fn),
    ):
        with pytest.raises(ValueError) as info:
            make()
        message = str(info.value)
        assert "'softmax', 'hardmax', 'sparsemax'" in message
        assert "callable" in message
        assert f"Received: probability_fn={probability_fn!r}" in message


def model_with(probability_fn):
    query = keras.Input((2, 5), name="query")
    value = keras.Input((6, 5), name="value")
    parts = [
        BahdanauAttention(4, probability_fn=probability_fn)(query, value),
        LuongAttention("concat", units=3, probability_fn=probability_fn)(query, value),
    ]
    return keras.Model([query, value], keras.layers.Concatenate()(parts))


@pytest.mark.parametrize("probability_fn", [*NAMES, squashed])
def test_keras_file_round_trip(probability_fn, tmp_path):
    query, value, _, _ = layer_inputs()
    model = model_with(probability_fn)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    loaded_scorers = [
        layer
        for layer in loaded.layers
        if isinstance(layer, (BahdanauAttention, LuongAttention))
    ]
    assert len(loaded_scorers) == 2
    for layer in loaded_scorers:
        assert layer.probability_fn == probability_fn
    x = {"query": query, "value": value}
    np.testing.assert_array_equal(
        loaded.predict(x, verbose=0), model.predict(x, verbose=0)
    )
    config = loaded_scorers[0].get_config()
    clone = BahdanauAttention.from_config(config)
    assert clone.probability_fn == probability_fn
    assert clone.get_config() == config


def unregistered(scores, mask):
    return masked_softmax(scores, mask)


@pytest.mark.parametrize(
    "probability_fn", [unregistered, lambda scores, mask: masked_softmax(scores, mask)]
)
def test_an_unregistered_callable_fails_to_save_with_the_fix(probability_fn, tmp_path):
    layer = LuongAttention(probability_fn=probability_fn)
    with pytest.raises(ValueError, match="register_keras_serializable"):
        layer.get_config()
    model = model_with(probability_fn)
    with pytest.raises(ValueError, match="register_keras_serializable"):
        model.save(str(tmp_path / "model.keras"))
