"""`AttentionDecoder` in the forms of tfa's `AttentionWrapper`, against NumPy.

The reference is tfa's `AttentionWrapper.call` written out in NumPy: the cell
reads [x_t; a_{t-1}], each mechanism scores the top layer's output h_t, and
a_t = W [c_t; h_t] (f of it, or a user's layer, or c_t without a layer); the
wrapper outputs a_t, or h_t with `output_attention=False`. The same forms are
checked against tfa's own numbers in `tests/test_tfa_reference.py`.
"""

import os

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import AttentionDecoder, BahdanauAttention, LuongAttention

B, T, S, D_IN, D_MEM, UNITS = 3, 4, 5, 6, 7, 8
rng = np.random.default_rng(7)
INPUTS = rng.normal(size=(B, T, D_IN)).astype("float32")
MEMORY = rng.normal(size=(B, S, D_MEM)).astype("float32")
MEMORY_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(99)


def np_(x):
    return ops.convert_to_numpy(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm(x, h, c, cell):
    gates = x @ np_(cell.kernel) + h @ np_(cell.recurrent_kernel) + np_(cell.bias)
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def luong_general(query, mechanism, mask):
    """Weights `(B, S)` and context `(B, D_MEM)` of Luong's general score."""
    keys = MEMORY @ np_(mechanism.key_dense.kernel)  # (B, S, units)
    scores = np.einsum("bu,bsu->bs", query, keys)
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return weights, np.einsum("bs,bsd->bd", weights, MEMORY)


def randomise(layer):
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.4, size=weight.shape).astype("float32"))


def tfa_wrapper(decoder, readouts, states, feeding=True, output_attention=True):
    """tfa's AttentionWrapper over INPUTS: outputs `(B, T, d)`, alignments.

    `readouts[i](h, c_i)` is mechanism i's attention vector (None: c_i).
    """
    cells = decoder.cell.cells if hasattr(decoder.cell, "cells") else [decoder.cell]
    states = [list(s) for s in states]  # per layer [h, c]
    attention = np.zeros((B, decoder.attention_size), "float32")
    outputs, alignments = [], []
    for t in range(T):
        x = np.concatenate([INPUTS[:, t], attention], -1) if feeding else INPUTS[:, t]
        for layer, cell in enumerate(cells):
            h, c = lstm(x, *states[layer], cell)
            states[layer] = [h, c]
            x = h
        parts, step_alignments = [], []
        for mechanism, readout in zip(decoder.mechanisms, readouts):
            weights, context = luong_general(h, mechanism, MEMORY_MASK)
            step_alignments.append(weights)
            parts.append(context if readout is None else readout(h, context))
        attention = np.concatenate(parts, -1)
        outputs.append(attention if output_attention else h)
        alignments.append(step_alignments)
    outputs = np.stack(outputs, 1)
    alignments = [np.stack([a[i] for a in alignments], 1) for i in range(len(readouts))]
    return outputs, alignments


def linear(kernel, activation=None):
    """A readout W [c; h] (the project's order) from a (dv + units, k) kernel."""

    def readout(h, context):
        out = np.concatenate([context, h], -1) @ np_(kernel)
        return out if activation is None else activation(out)

    return readout


def initial_states(layers):
    return [
        [rng.normal(size=(B, UNITS)).astype("float32") for _ in range(2)]
        for _ in range(layers)
    ]


def run(decoder, states):
    flat = [s for layer in states for s in layer]
    return decoder(INPUTS, MEMORY, initial_state=flat, memory_mask=MEMORY_MASK)


def build_and_randomise(decoder, layers=1):
    run(decoder, initial_states(layers))
    randomise(decoder)
    return decoder


def check(decoder, readouts, layers=1, **reference):
    states = initial_states(layers)
    outputs, alignments = run(decoder, states)
    want_outputs, want_alignments = tfa_wrapper(decoder, readouts, states, **reference)
    np.testing.assert_allclose(np_(outputs), want_outputs, atol=2e-5)
    got = alignments if isinstance(alignments, (list, tuple)) else [alignments]
    assert len(got) == len(want_alignments)
    for g, w in zip(got, want_alignments):
        np.testing.assert_allclose(np_(g), w, atol=2e-5)
    return decoder


def luong():
    return LuongAttention("general")


def test_default_tfa_wrapper_outputs_and_feeds_back_the_context():
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS),
            attention=luong(),
            attention_layer_size=None,
        )
    )
    check(decoder, [None])
    assert decoder.output_size == D_MEM


@pytest.mark.parametrize("activation", [None, "tanh", "relu"])
def test_attention_activation(activation):
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS),
            attention=luong(),
            attention_layer_size=5,
            attention_activation=activation,
        )
    )
    fn = {None: None, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0)}[activation]
    check(decoder, [linear(decoder.attention_dense.kernel, fn)])


def test_a_users_attention_layer_replaces_w_c():
    layer = keras.layers.Dense(5, activation="sigmoid", name="users_layer")
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS), attention=luong(), attention_layer=layer
        )
    )
    assert decoder.attention_dense is None and decoder.output_size == 5

    def readout(h, context):
        pre = np.concatenate([context, h], -1) @ np_(layer.kernel) + np_(layer.bias)
        return sigmoid(pre)

    check(decoder, [readout])


def test_output_attention_false_outputs_h_and_feeds_back_the_attention():
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS),
            attention=luong(),
            attention_layer_size=5,
            attention_activation=None,
            output_attention=False,
        )
    )
    assert decoder.output_size == UNITS and decoder.attention_size == 5
    check(decoder, [linear(decoder.attention_dense.kernel)], output_attention=False)


@pytest.mark.parametrize("fast", [True, False], ids=["fast_path", "step_path"])
def test_stacked_cells_query_with_the_top_layer(fast):
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=[keras.layers.LSTMCell(UNITS), keras.layers.LSTMCell(UNITS)],
            attention=luong(),
            input_feeding=not fast,
            attention_layer_size=5,
            attention_activation=None,
        ),
        layers=2,
    )
    assert isinstance(decoder.cell, keras.layers.StackedRNNCells)
    assert decoder._fast == fast
    check(decoder, [linear(decoder.attention_dense.kernel)], layers=2, feeding=not fast)


def test_two_mechanisms_each_with_its_layer_and_alignments():
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS),
            attention=[luong(), LuongAttention("general", name="second")],
            attention_layer_size=[5, 3],
            attention_activation=None,
        )
    )
    assert decoder.output_size == 8
    kernels = [layer.kernel for layer in decoder.attention_dense]
    check(decoder, [linear(kernels[0]), linear(kernels[1])])


def test_two_mechanisms_without_layers_concatenate_their_contexts():
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=keras.layers.LSTMCell(UNITS),
            attention=[luong(), luong()],
            attention_layer_size=None,
        )
    )
    assert decoder.output_size == 2 * D_MEM
    check(decoder, [None, None])


@pytest.mark.parametrize("query", ["previous", "current"])
def test_stacked_fast_path_equals_the_step_path(query):
    # Two drivers of the same equations: a stock RNN over a stack and attention
    # for all steps at once, against the step loop (which reads the top layer's
    # h from the flat state list).
    kwargs = dict(
        cell=[keras.layers.GRUCell(UNITS), keras.layers.GRUCell(UNITS)],
        attention=[BahdanauAttention(UNITS), luong()],
        query=query,
        input_feeding=False,
        attention_layer_size=[4, 6],
    )
    fast = AttentionDecoder(**kwargs)
    states = [rng.normal(size=(B, UNITS)).astype("float32") for _ in range(2)]
    fast(INPUTS, MEMORY, initial_state=states, memory_mask=MEMORY_MASK)
    randomise(fast)
    slow = AttentionDecoder.from_config({**fast.get_config(), "use_fast_path": False})
    slow(INPUTS, MEMORY, initial_state=states, memory_mask=MEMORY_MASK)
    slow.set_weights(fast.get_weights())
    assert fast._fast and not slow._fast
    got = fast(INPUTS, MEMORY, initial_state=states, memory_mask=MEMORY_MASK)
    want = slow(INPUTS, MEMORY, initial_state=states, memory_mask=MEMORY_MASK)
    for g, w in zip(keras.tree.flatten(got), keras.tree.flatten(want)):
        np.testing.assert_allclose(np_(g), np_(w), atol=1e-5)


def test_steps_reproduce_the_call_with_stacks_and_two_mechanisms():
    decoder = build_and_randomise(
        AttentionDecoder(
            cell=[keras.layers.LSTMCell(UNITS), keras.layers.LSTMCell(UNITS)],
            attention=[luong(), BahdanauAttention(UNITS)],
            attention_layer_size=[5, 3],
            output_attention=False,
        ),
        layers=2,
    )
    states = initial_states(2)
    outputs, alignments = run(decoder, states)
    memory = decoder.prepare_memory(MEMORY, MEMORY_MASK)
    assert isinstance(memory, list) and len(memory) == 2
    step_states = decoder.get_initial_state(B, states)  # nested per layer
    assert len(step_states) == 5  # h1, c1, h2, c2, a_{t-1}
    for t in range(T):
        out, step_states, weights = decoder.step(INPUTS[:, t], step_states, memory)
        np.testing.assert_allclose(np_(out), np_(outputs)[:, t], atol=1e-5)
        for w, a in zip(weights, alignments):
            np.testing.assert_allclose(np_(w), np_(a)[:, t], atol=1e-5)


def test_keras_file_round_trip_of_the_tfa_forms(tmp_path):
    tokens = keras.Input((None, D_IN))
    memory = keras.Input((None, D_MEM))
    decoder = AttentionDecoder(
        cell=[keras.layers.LSTMCell(UNITS), keras.layers.LSTMCell(UNITS)],
        attention=["luong_general", BahdanauAttention(UNITS)],
        attention_layer=[keras.layers.Dense(4), keras.layers.Dense(3)],
        output_attention=False,
        attention_activation=None,
    )
    outputs = decoder(tokens, memory)
    model = keras.Model([tokens, memory], [outputs[0]] + list(outputs[1]))
    randomise(model)
    want = [np_(x) for x in model([INPUTS, MEMORY])]
    path = os.path.join(tmp_path, "decoder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    got = [np_(x) for x in loaded([INPUTS, MEMORY])]
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    config = loaded.layers[-1].get_config()
    assert config["output_attention"] is False
    assert config["attention_activation"] is None
    assert config["attention"][0] == "luong_general"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"attention_layer_size": [4, 5]}, "list of attentions of the same length"),
        (
            {"attention": ["bahdanau"], "attention_layer_size": [4, 5]},
            "list of attentions of the same length",
        ),
        ({"attention": []}, "non-empty list"),
        ({"attention_activation": "no_such_activation"}, "attention_activation"),
        (
            {"attention_layer": keras.layers.Dense(3), "attention_layer_size": 4},
            "cannot both be set",
        ),
        ({"attention_layer": "dense"}, "must be a Keras layer"),
        ({"attention_layer_size": "wide"}, "attention_layer_size"),
        ({"cell": [keras.layers.GRUCell(4), "gru"]}, "Every cell of a stack"),
    ],
)
def test_bad_arguments_get_one_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionDecoder(**{"units": 4, "cell": "gru", **kwargs})


def test_docstring_examples_run():
    import doctest

    from keras_rnnattn.layers import attention_decoder

    result = doctest.testmod(attention_decoder)
    assert result.attempted > 0 and result.failed == 0


def test_attention_dropout_trains_through_the_compiled_scan():
    # Each step's dropout numbers are drawn before the loop (`draw_noise`): a
    # draw inside the scan's body would not trace under `fit` on JAX.
    decoder = AttentionDecoder(
        UNITS, cell="gru", attention=BahdanauAttention(UNITS, dropout=0.5, seed=3)
    )
    tokens, memory = keras.Input((T, D_IN)), keras.Input((S, D_MEM))
    model = keras.Model([tokens, memory], decoder(tokens, memory)[0])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit([INPUTS, MEMORY], np.zeros((B, T, UNITS)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    quiet = np_(decoder(INPUTS, MEMORY)[0])
    assert np.array_equal(quiet, np_(decoder(INPUTS, MEMORY)[0]))
    noisy = np_(ops.stop_gradient(decoder(INPUTS, MEMORY, training=True)[0]))
    assert np.abs(noisy - quiet).max() > 1e-3
