"""Whole models under bad numbers: all-padding rows, ±1e4 inputs and logits, float16/bfloat16.

The layer-level cases are in tests/layers/test_masks_and_precision.py; these run a
Translator and an AttentionClassifier forward and backward end to end.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.models import AttentionClassifier, Translator
from keras_rnnattn.models.losses import MaskedSparseCrossEntropy
from keras_rnnattn.text import CharTokenizer
from tests.reliability.gradients import loss_and_gradients, to_numpy

# float32 runs with `-m slow`: the default run keeps the two narrow types.
POLICIES = [
    pytest.param("float32", marks=pytest.mark.slow),
    "mixed_float16",
    "mixed_bfloat16",
]
DIGITS = CharTokenizer().fit(["0123456789"])
EXTREME = 1e4  # representable in float16 (max 65504) and bfloat16

# Row 0 is a real pair; row 1 is all padding (an empty source and no target).
SOURCE = np.array([[5, 6, 7, 8, 3], [0, 0, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 8, 7, 6], [0, 0, 0, 0]], "int32")
TARGET_OUT = np.array([[8, 7, 6, 3], [0, 0, 0, 0]], "int32")
# Row 1 is all padding; row 2 has one real token.
TOKENS = np.array([[3, 5, 7, 9, 0], [0, 0, 0, 0, 0], [4, 0, 0, 0, 0]], "int32")
LABELS = np.array([0, 1, 2], "int32")


def slow_unless(*fast):
    """Parameter values, all but `fast` marked slow (the default run stays short)."""
    return lambda *values: [
        v if v in fast else pytest.param(v, marks=pytest.mark.slow) for v in values
    ]


def translator(attention):
    return Translator(
        DIGITS,
        DIGITS,
        embedding_dim=4,
        units=8,
        attention=attention,
        cell="lstm" if attention == "luong_general" else "gru",
    )


def classifier():
    return AttentionClassifier(
        vocabulary_size=12, num_classes=3, embedding_dim=4, units=4
    )


def translator_loss(model, source=SOURCE, target_in=TARGET_IN, target_out=TARGET_OUT):
    logits = model((source, target_in), training=True)  # (B, T, V)
    return MaskedSparseCrossEntropy()(target_out, logits), logits


def classifier_loss(model, tokens=TOKENS, labels=LABELS):
    probabilities = model(tokens, training=True)  # (B, C)
    loss = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
    return ops.mean(loss), probabilities


def set_extreme(layer_weights, scale):
    """Every value of the weight set to ±scale (keeping its sign)."""
    value = to_numpy(layer_weights)
    layer_weights.assign(np.where(value >= 0, scale, -scale).astype("float32"))


def assert_finite(loss, grads, outputs):
    assert np.isfinite(loss), loss
    assert np.all(np.isfinite(outputs))
    for g in grads:
        assert np.all(np.isfinite(g)), "a gradient has NaN or Inf"
    assert any(np.any(g != 0) for g in grads), "every gradient is zero"


@pytest.mark.parametrize(
    "policy", slow_unless("mixed_float16")("float32", "mixed_float16", "mixed_bfloat16")
)
@pytest.mark.parametrize(
    "attention", slow_unless("bahdanau")("bahdanau", "luong_general", "none")
)
def test_translator_all_padding_row(policy, attention):
    keras.config.set_dtype_policy(policy)
    model = translator(attention)

    def both():
        loss, logits = translator_loss(model)
        real_loss, alone = translator_loss(
            model, SOURCE[:1], TARGET_IN[:1], TARGET_OUT[:1]
        )
        return loss, (logits, alone, real_loss)

    loss, grads, (logits, alone, real_loss) = loss_and_gradients(model, both)
    assert_finite(loss, grads, logits)
    # The padded row changes nothing in the real row (exact up to rounding),
    # and only real tokens count: the loss is the real row's alone.
    tolerance = 1e-5 if policy == "float32" else 2e-2
    np.testing.assert_allclose(logits[:1], alone, atol=tolerance)
    np.testing.assert_allclose(loss, real_loss, rtol=tolerance)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "attention", slow_unless("luong_concat")("bahdanau", "luong_concat")
)
def test_translator_extreme_inputs_and_logits(policy, attention):
    keras.config.set_dtype_policy(policy)
    model = translator(attention)
    # Embeddings of ±1e4 saturate every RNN gate; the output layer is set so
    # that the logits reach ±1e4 (|logit| <= EXTREME for tanh-bounded features).
    set_extreme(model.source_embedding.embeddings, EXTREME)
    set_extreme(model.target_embedding.embeddings, EXTREME)
    width = model.output_dense.kernel.shape[0]
    set_extreme(model.output_dense.kernel, EXTREME / width)
    loss, grads, logits = loss_and_gradients(model, lambda: translator_loss(model))
    assert_finite(loss, grads, logits)
    assert np.max(np.abs(logits)) > 0.1 * EXTREME  # the logits are extreme
    # Greedy decoding on the same weights stays finite too.
    tokens, scores = model.generate_ids(SOURCE[:1], max_length=4)
    assert np.all(np.isfinite(scores)) and tokens.shape == (1, 4)


@pytest.mark.parametrize("policy", POLICIES)
def test_classifier_all_padding_row(policy):
    keras.config.set_dtype_policy(policy)
    model = classifier()

    def all_and_alone():
        loss, probabilities = classifier_loss(model)
        alone = [
            classifier_loss(model, TOKENS[r : r + 1], LABELS[r : r + 1])[1]
            for r in (0, 2)
        ]
        return loss, (probabilities, alone)

    loss, grads, (probabilities, alone) = loss_and_gradients(model, all_and_alone)
    assert_finite(loss, grads, probabilities)
    atol = 1e-6 if policy == "float32" else 1e-2
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=atol)
    # Neither the all-padding row nor the 1-token row changes the others.
    np.testing.assert_allclose(probabilities[0:1], alone[0], atol=atol)
    np.testing.assert_allclose(probabilities[2:3], alone[1], atol=atol)


@pytest.mark.parametrize("policy", POLICIES)
def test_classifier_extreme_inputs_and_logits(policy):
    keras.config.set_dtype_policy(policy)
    model = classifier()
    set_extreme(model.token_embedding.embeddings, EXTREME)
    score = model.pooling_layer.score_dense.kernel  # the attention scores reach ±1e4
    set_extreme(score, EXTREME / score.shape[0])
    kernel = model.output_dense.kernel  # the class logits reach ±1e4
    set_extreme(kernel, EXTREME / kernel.shape[0])
    loss, grads, probabilities = loss_and_gradients(
        model, lambda: classifier_loss(model)
    )
    assert_finite(loss, grads, probabilities)
    assert np.all(probabilities >= 0) and np.all(probabilities <= 1)
    # Saturated: one class takes (almost) all the probability of the real rows;
    # the all-padding row has no features, so its probabilities are uniform.
    assert np.all(probabilities[[0, 2]].max(-1) > 0.99)
    np.testing.assert_allclose(probabilities[1], 1 / 3, atol=1e-3)
