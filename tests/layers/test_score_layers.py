"""The registry of attention names and its factory, read by every user of a name."""

import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import (
    AttentionDecoder,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    SequenceSelfAttention,
    score_layers,
)
from keras_rnnattn.layers.score_layers import score_layer


@pytest.mark.parametrize(
    "name, cls, score, scale",
    [
        ("bahdanau", BahdanauAttention, None, None),
        ("dot", LuongAttention, "dot", False),
        ("luong_dot", LuongAttention, "dot", False),
        ("scaled_dot", LuongAttention, "dot", True),
        ("luong_scaled_general", LuongAttention, "general", True),
        ("luong_concat", LuongAttention, "concat", False),
    ],
)
def test_names_map_to_layers(name, cls, score, scale):
    layer = score_layer(name, 6, name="attention")
    assert type(layer) is cls and layer.name == "attention"
    if cls is BahdanauAttention:
        assert layer.units == 6
    else:
        assert (layer.score, layer.scale) == (score, scale)
        # Only the concat score has a hidden size.
        assert layer.units == (6 if score == "concat" else None)


def test_location_takes_the_source_length():
    layer = score_layer("luong_location", None, source_length=5)
    assert (layer.score, layer.source_length) == ("location", 5)
    query = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    value = np.ones((2, 5, 4), "float32")
    context = ops.convert_to_numpy(layer(query, value))
    assert context.shape == (2, 3, 4)
    with pytest.raises(ValueError, match="source_length"):
        score_layer("luong_location", None)


@pytest.mark.parametrize(
    "name, cls",
    [
        ("bahdanau_monotonic", BahdanauMonotonicAttention),
        ("luong_monotonic", LuongMonotonicAttention),
    ],
)
def test_monotonic_names_take_the_translator_settings(name, cls):
    layer = score_layer(name, 6, name="attention")
    assert type(layer) is cls and layer.name == "attention"
    config = layer.get_config()
    assert config["sigmoid_noise"] == score_layers.MONOTONIC_SIGMOID_NOISE
    assert config["score_bias_init"] == score_layers.MONOTONIC_SCORE_BIAS_INIT
    if cls is BahdanauMonotonicAttention:
        assert layer.units == 6
    # A caller's own settings win.
    assert score_layer(name, 6, sigmoid_noise=0.0).get_config()["sigmoid_noise"] == 0


def test_none_is_no_layer():
    assert score_layer(score_layers.NO_ATTENTION, 6) is None


def test_every_listed_name_builds_and_its_reader_takes_it():
    for name in score_layers.TRANSLATOR_ATTENTIONS:
        layer = score_layer(name, 4, source_length=3)
        assert (layer is None) == (name == score_layers.NO_ATTENTION), name
    for name in score_layers.DECODER_ATTENTIONS:
        assert AttentionDecoder(4, attention=name).get_config()["attention"] == name
    for name in score_layers.SELF_ATTENTION_SCORES:
        assert SequenceSelfAttention(score=name).score == name
    with pytest.raises(ValueError, match="luong_concat"):
        AttentionDecoder(4, attention="luong_location")
