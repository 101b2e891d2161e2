"""The score-name factory shared by AttentionDecoder and SequenceSelfAttention."""

import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import BahdanauAttention, LuongAttention
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
