"""Every layer: padding changes nothing, all-masked rows are zero, no NaN in any policy."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import (
    AttentionPooling,
    BahdanauAttention,
    LuongAttention,
    SequenceSelfAttention,
)
from tests.layer_test_utils import to_numpy

rng = np.random.default_rng(4)
QUERY = rng.normal(size=(2, 3, 4)).astype("float32")
VALUE = rng.normal(size=(2, 5, 4)).astype("float32")
LENGTHS = np.array([3, 0])  # the second row is all padding

SCORERS = {
    "bahdanau": lambda **kw: BahdanauAttention(4, **kw),
    "bahdanau_normalized": lambda **kw: BahdanauAttention(4, normalize=True, **kw),
    "dot": lambda **kw: LuongAttention("dot", **kw),
    "scaled_general": lambda **kw: LuongAttention("general", scale=True, **kw),
    "concat": lambda **kw: LuongAttention("concat", **kw),
    "location": lambda **kw: LuongAttention("location", source_length=5, **kw),
}
SEQUENCE_LAYERS = {
    "pooling": lambda **kw: AttentionPooling(**kw),
    "structured": lambda **kw: AttentionPooling(units=3, hops=2, penalty=1.0, **kw),
    "self_dot": lambda **kw: SequenceSelfAttention(**kw),
    "self_causal_bahdanau": lambda **kw: SequenceSelfAttention(
        "bahdanau", causal=True, **kw
    ),
}
POLICIES = ["float32", "mixed_float16", "mixed_bfloat16"]


def value_mask(length=5):
    return np.arange(length)[None, :] < LENGTHS[:, None]  # (2, length)


@pytest.mark.parametrize("name", SCORERS)
def test_scorer_padding_changes_nothing(name):
    layer = SCORERS[name]()
    padded = layer(QUERY, VALUE, value_mask=value_mask(), return_attention_scores=True)
    truncated = layer(QUERY[:1], VALUE[:1, :3], return_attention_scores=True)
    np.testing.assert_allclose(
        to_numpy(padded[0])[:1], to_numpy(truncated[0]), atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(padded[1])[:1, :, :3], to_numpy(truncated[1]), atol=1e-6
    )


@pytest.mark.parametrize("name", SEQUENCE_LAYERS)
def test_sequence_layer_padding_changes_nothing(name):
    layer = SEQUENCE_LAYERS[name]()
    padded = to_numpy(layer(VALUE, mask=value_mask()))
    truncated = to_numpy(layer(VALUE[:1, :3]))
    if padded.ndim == 3:
        padded = padded[:, :3]
    np.testing.assert_allclose(padded[:1], truncated, atol=1e-6)


def _grads_are_finite(fn, variables):
    """Gradient of sum(fn()) w.r.t. variables is finite (one named backend branch)."""
    if not variables:
        return np.all(np.isfinite(to_numpy(ops.cast(fn(), "float32"))))
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = ops.sum(ops.cast(fn(), "float32"))
        grads = tape.gradient(loss, [v.value for v in variables])
    elif backend == "jax":
        import jax

        values = [v.value for v in variables]

        def loss_fn(vals):
            for var, val in zip(variables, vals):
                var.assign(val)
            return ops.sum(ops.cast(fn(), "float32"))

        with keras.StatelessScope():
            # One compiled program, as in training, not one per eager op.
            grads = jax.jit(jax.grad(loss_fn))(values)
    else:
        loss = ops.sum(ops.cast(fn(), "float32"))
        grads = [
            g
            for g in __import__("torch").autograd.grad(
                loss, [v.value for v in variables], allow_unused=True
            )
            if g is not None
        ]
    return all(np.all(np.isfinite(to_numpy(ops.cast(g, "float32")))) for g in grads)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", list(SCORERS) + list(SEQUENCE_LAYERS))
def test_all_masked_rows_are_zero_and_finite(name, policy):
    make = SCORERS.get(name) or SEQUENCE_LAYERS[name]
    layer = make(dtype=policy)
    scale = 1e3 if policy == "float32" else 60.0  # extreme but representable inputs
    value = VALUE * scale

    def call():
        if name in SCORERS:
            return layer(
                QUERY * scale,
                value,
                value_mask=value_mask(),
                return_attention_scores=True,
            )
        return layer(value, mask=value_mask(), return_attention_scores=True)

    outputs, weights = (to_numpy(ops.cast(x, "float32")) for x in call())
    assert np.all(np.isfinite(outputs)) and np.all(np.isfinite(weights))
    assert np.all(weights[1] == 0)
    if name not in ("self_dot", "self_causal_bahdanau"):
        assert np.all(outputs[1] == 0)
    else:  # [h_i; c_i]: the context half is zero
        assert np.all(outputs[1, :, 4:] == 0)
    assert _grads_are_finite(lambda: call()[0], layer.trainable_variables)
