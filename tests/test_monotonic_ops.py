"""`ops.safe_cumprod` and `ops.monotonic_attention` against NumPy loops of the formulas."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.ops import monotonic_attention, safe_cumprod

rng = np.random.default_rng(3)
P = rng.uniform(0.05, 0.95, size=(4, 9)).astype("float32")
PREVIOUS = rng.dirichlet(np.ones(9), size=4).astype("float32")


def np_(x):
    return ops.convert_to_numpy(x)


def recursion(p, previous):
    """Raffel et al. eq. 10-12 as a loop: q_j = (1 - p_{j-1}) q_{j-1} + a_j."""
    attention = np.zeros_like(p, dtype="float64")
    for b in range(p.shape[0]):
        q = 0.0
        for j in range(p.shape[1]):
            q = (1 - p[b, j - 1]) * q + previous[b, j] if j else previous[b, 0]
            attention[b, j] = p[b, j] * q
    return attention


def test_safe_cumprod_is_the_log_space_product():
    x = np.array([[0.5, 1.0, 0.25, 0.0, 0.5], [1.0, 1.0, 0.1, 0.9, 1.0]], "float32")
    tiny = np.finfo("float32").tiny
    want = np.exp(np.cumsum(np.log(np.clip(x.astype("float64"), tiny, 1)), -1))
    np.testing.assert_allclose(np_(safe_cumprod(x)), want, rtol=1e-5, atol=1e-30)
    exclusive = np.concatenate([np.ones((2, 1)), want[:, :-1]], -1)
    np.testing.assert_allclose(
        np_(safe_cumprod(x, exclusive=True)), exclusive, rtol=1e-5, atol=1e-30
    )
    # A 0 counts as `tiny`: never log(0), the products after it at most tiny
    # (subnormal: XLA on CPU flushes them to 0).
    after_zero = np_(safe_cumprod(x))[0, 3:]
    assert np.isfinite(after_zero).all() and (after_zero <= tiny).all()
    np.testing.assert_allclose(
        np_(safe_cumprod(x.T, axis=0)), want.T, rtol=1e-5, atol=1e-30
    )


@pytest.mark.parametrize("mode", ["recursive", "parallel"])
def test_soft_modes_follow_the_recursion(mode):
    got = np_(monotonic_attention(P, PREVIOUS, mode))
    np.testing.assert_allclose(got, recursion(P, PREVIOUS), atol=1e-6)
    assert (got.sum(-1) <= 1 + 1e-6).all()


def test_the_first_step_is_a_chain_of_stops():
    # From the first position: attention_j = p_j · prod_{k<j} (1 - p_k).
    first = np.eye(9, dtype="float32")[np.zeros(4, int)]
    want = P * np.cumprod(np.concatenate([np.ones((4, 1)), 1 - P[:, :-1]], -1), -1)
    for mode in ("recursive", "parallel"):
        np.testing.assert_allclose(
            np_(monotonic_attention(P, first, mode)), want, atol=1e-6
        )


def test_hard_mode_stops_at_the_first_choice_from_the_previous_position():
    p = (rng.uniform(size=(6, 9)) < 0.35).astype("float32")
    positions = np.array([0, 2, 4, 8, 3, 5])
    previous = np.eye(9, dtype="float32")[positions]
    got = np_(monotonic_attention(p, previous, "hard"))
    for b, start in enumerate(positions):
        chosen = [j for j in range(start, 9) if p[b, j] == 1]
        want = np.zeros(9)
        if chosen:
            want[chosen[0]] = 1
        np.testing.assert_array_equal(got[b], want)
    # With 0/1 inputs the soft modes give the same attention.
    np.testing.assert_allclose(
        np_(monotonic_attention(p, previous, "recursive")), got, atol=1e-6
    )


def test_any_leading_shape_and_the_dtype():
    p3 = P.reshape(2, 2, 9)
    previous3 = PREVIOUS.reshape(2, 2, 9)
    for mode in ("recursive", "parallel"):
        got = monotonic_attention(p3, previous3, mode)
        np.testing.assert_allclose(
            np_(got).reshape(4, 9), recursion(P, PREVIOUS), atol=1e-6
        )
    half = monotonic_attention(P.astype("float16"), PREVIOUS, "parallel")
    assert keras.backend.standardize_dtype(half.dtype) == "float16"


def test_gradients_are_finite_near_zero_and_one():
    p = np.array([[1e-7, 0.999999, 0.5, 1e-7, 0.3]], "float32")
    first = np.eye(5, dtype="float32")[[0]]
    if keras.backend.backend() == "jax":
        import jax

        grad = jax.grad(lambda x: monotonic_attention(x, first, "parallel").sum())(p)
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        x = tf.constant(p)
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(monotonic_attention(x, first, "parallel"))
        grad = tape.gradient(total, x)
    else:
        import torch

        x = torch.tensor(p, requires_grad=True)
        monotonic_attention(x, first, "parallel").sum().backward()
        grad = x.grad
    assert np.isfinite(np_(grad)).all()


def test_an_unknown_mode_is_named():
    with pytest.raises(ValueError, match="Received: mode='soft'"):
        monotonic_attention(P, PREVIOUS, "soft")
