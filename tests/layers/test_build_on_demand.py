"""Methods called before a layer's first call build it from the shapes they get."""

import os

import keras
import numpy as np
import pytest

from keras_rnnattn.layers import AttentionDecoder, BahdanauAttention, LuongAttention
from tests.layer_test_utils import to_numpy

rng = np.random.default_rng(7)
STATE = rng.normal(size=(2, 16)).astype("float32")  # one decoder step (B, dq)
MEMORY = rng.normal(size=(2, 7, 12)).astype("float32")  # (B, S, dv)
KEY = rng.normal(size=(2, 7, 5)).astype("float32")  # (B, S, dk), dk != dv
MASK = np.array([[1] * 7, [1, 1, 1, 1, 0, 0, 0]], dtype=bool)
TARGETS = rng.normal(size=(2, 4, 8)).astype("float32")  # embedded (B, T, E)

SCORERS = {
    "bahdanau": lambda: BahdanauAttention(units=8),
    "bahdanau_normalized": lambda: BahdanauAttention(units=8, normalize=True),
    "luong_concat_units": lambda: LuongAttention("concat", units=8),
    "luong_general_units": lambda: LuongAttention("general", units=16),
    "luong_dot": lambda: LuongAttention("dot"),
    "luong_location": lambda: LuongAttention("location", source_length=9),
}


def _copy_weights(source, target):
    """Gives `target` the weights of `source`, checking that they line up."""
    assert [w.shape for w in source.weights] == [w.shape for w in target.weights]
    target.set_weights(source.get_weights())


@pytest.mark.parametrize("name", sorted(SCORERS))
def test_precompute_keys_before_the_first_call(name):
    make = SCORERS[name]
    state = MEMORY[:, 0] if name == "luong_dot" else STATE  # dot: dq == dk
    layer = make()
    keys = layer.precompute_keys(MEMORY)  # the Quick start's order
    context, weights = layer(
        state, MEMORY, processed_key=keys, value_mask=MASK, return_attention_scores=True
    )
    assert tuple(context.shape) == (2, 12) and tuple(weights.shape) == (2, 7)
    reference = make()
    reference(state, MEMORY)  # a normal first call builds it
    _copy_weights(reference, layer)
    want_context, want_weights = reference(
        state, MEMORY, value_mask=MASK, return_attention_scores=True
    )
    context, weights = layer(
        state,
        MEMORY,
        processed_key=layer.precompute_keys(MEMORY),
        value_mask=MASK,
        return_attention_scores=True,
    )
    np.testing.assert_allclose(to_numpy(context), to_numpy(want_context), atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), to_numpy(want_weights), atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau", "luong_concat_units", "luong_location"])
def test_attend_before_the_first_call(name):
    make = SCORERS[name]
    query = STATE[:, None]  # (B, 1, dq)
    layer = make()
    context, weights = layer.attend(
        query, MEMORY, layer.precompute_keys(KEY), value_mask=MASK
    )
    assert tuple(context.shape) == (2, 1, 12) and tuple(weights.shape) == (2, 1, 7)
    reference = make()
    want = reference(query, MEMORY, key=KEY, value_mask=MASK)
    _copy_weights(reference, layer)
    context, _ = layer.attend(
        query, MEMORY, layer.precompute_keys(KEY), value_mask=MASK
    )
    np.testing.assert_allclose(to_numpy(context), to_numpy(want), atol=1e-5)


def test_a_layer_built_by_precompute_keys_saves_and_reloads(tmp_path):
    # The key projection was built from a key of another depth than the values:
    # the build config must say so, or the reloaded layer gets other shapes.
    query = keras.Input((16,))
    memory = keras.Input((7, 12))
    key = keras.Input((7, 5))
    layer = BahdanauAttention(units=8)
    layer.precompute_keys(KEY)
    layer(STATE, MEMORY, processed_key=layer.precompute_keys(KEY))
    model = keras.Model(
        [query, memory, key], layer(query, memory, key=key), name="attention"
    )
    path = os.path.join(tmp_path, "attention.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        to_numpy(loaded([STATE, MEMORY, KEY])),
        to_numpy(model([STATE, MEMORY, KEY])),
        atol=1e-6,
    )


def test_general_units_is_the_query_depth():
    layer = LuongAttention("general", units=16)
    assert tuple(layer.precompute_keys(MEMORY).shape) == (2, 7, 16)
    with pytest.raises(ValueError, match="query depth of 16. Received: query depth 8"):
        layer(STATE[:, :8], MEMORY)
    with pytest.raises(ValueError, match="not used by score='dot'"):
        LuongAttention("dot", units=16)


@pytest.mark.parametrize("kwargs", [{"score": "general"}, {"score": "concat"}])
def test_keys_projected_to_the_query_depth_need_the_query(kwargs):
    layer = LuongAttention(**kwargs)
    with pytest.raises(ValueError, match=r"layer\.build\(query_shape, value_shape\)"):
        layer.precompute_keys(MEMORY)
    layer.build((None, 16), MEMORY.shape)  # the fix the message names
    keys = layer.precompute_keys(MEMORY)
    reference = LuongAttention(**kwargs)
    reference(STATE, MEMORY)
    _copy_weights(reference, layer)
    np.testing.assert_allclose(
        to_numpy(layer(STATE, MEMORY, processed_key=layer.precompute_keys(MEMORY))),
        to_numpy(reference(STATE, MEMORY)),
        atol=1e-5,
    )
    assert tuple(keys.shape)[:2] == (2, 7)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attention": "bahdanau"},
        {"attention": "luong_general", "cell": "lstm"},
        {"attention": "luong_concat", "attention_layer_size": "concat"},
        {"attention": "luong_concat", "attention_layer_size": None},
        {"attention": "luong_dot", "input_feeding": False},
    ],
    ids=[
        "bahdanau",
        "luong_general_lstm",
        "luong_concat_concat_readout",
        "luong_concat_no_readout",
        "luong_dot",
    ],
)
def test_decoder_step_before_the_first_call(kwargs):
    units = 12 if kwargs["attention"] == "luong_dot" else 16  # dot: units == dv
    decoder = AttentionDecoder(units, **kwargs)
    memory = decoder.prepare_memory(MEMORY, MASK)
    states = decoder.get_initial_state(2)
    outputs = []
    for t in range(TARGETS.shape[1]):
        output, states, _ = decoder.step(TARGETS[:, t], states, memory)
        outputs.append(to_numpy(output))
    reference = AttentionDecoder(units, **kwargs)
    reference(TARGETS, MEMORY)  # a normal first call builds it
    _copy_weights(reference, decoder)
    want, _ = reference(TARGETS, MEMORY, memory_mask=MASK)
    memory = decoder.prepare_memory(MEMORY, MASK)
    states = decoder.get_initial_state(2)
    for t in range(TARGETS.shape[1]):
        output, states, _ = decoder.step(TARGETS[:, t], states, memory)
        np.testing.assert_allclose(to_numpy(output), to_numpy(want)[:, t], atol=1e-5)
    assert all(np.isfinite(o).all() for o in outputs)
