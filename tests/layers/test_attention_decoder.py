import os

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn._backend import rnn_kind, run_rnn
from keras_rnnattn.layers.attention_decoder import AttentionDecoder
from keras_rnnattn.layers.luong_attention import LuongAttention

B, T, S, D_IN, D_MEM, UNITS = 3, 4, 5, 6, 7, 8
rng = np.random.default_rng(0)
INPUTS = rng.normal(size=(B, T, D_IN)).astype("float32")
MEMORY = rng.normal(size=(B, S, D_MEM)).astype("float32")
MEMORY_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool)


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def np_(x):
    return ops.convert_to_numpy(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax_masked(scores, mask):
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def gru_reference(x, h, cell):
    """Keras's GRU (reset_after=True): gates in the order z, r, h."""
    kernel, rec, bias = np_(cell.kernel), np_(cell.recurrent_kernel), np_(cell.bias)
    xz, xr, xh = np.split(x @ kernel + bias[0], 3, axis=-1)
    rz, rr, rh = np.split(h @ rec + bias[1], 3, axis=-1)
    z, r = sigmoid(xz + rz), sigmoid(xr + rr)
    candidate = np.tanh(xh + r * rh)
    return z * h + (1 - z) * candidate


def lstm_reference(x, h, c, cell):
    """Keras's LSTM: gates in the order i, f, c, o."""
    gates = x @ np_(cell.kernel) + h @ np_(cell.recurrent_kernel) + np_(cell.bias)
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def build(decoder):
    decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    return decoder


def randomise(layer):
    """Non-trivial weights everywhere (biases included) so every term matters."""
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))


def test_bahdanau_step_matches_the_papers_equations():
    decoder = build(AttentionDecoder(UNITS, cell="gru", attention="bahdanau"))
    randomise(decoder)
    att = decoder.attention
    s_prev = rng.normal(size=(B, UNITS)).astype("float32")
    y = INPUTS[:, 0]

    memory = decoder.prepare_memory(MEMORY, MEMORY_MASK)
    out, states, weights = decoder.step(y, [s_prev], memory)

    # e_j = vᵀ tanh(W_q s_{t-1} + W_k h_j + b); a = softmax(e); c = Σ a_j h_j
    hidden = np.tanh(
        (s_prev @ np_(att.query_dense.kernel))[:, None]
        + MEMORY @ np_(att.key_dense.kernel)
        + np_(att.b)
    )
    a = softmax_masked(hidden @ np_(att.v), MEMORY_MASK)
    c = np.einsum("bs,bsd->bd", a, MEMORY)
    # s_t = GRU([y_{t-1}; c_t], s_{t-1}); o_t = tanh(W_c [c_t; s_t])
    s = gru_reference(np.concatenate([y, c], -1), s_prev, decoder.cell)
    o = np.tanh(np.concatenate([c, s], -1) @ np_(decoder.attention_dense.kernel))

    np.testing.assert_allclose(np_(weights), a, atol=1e-5)
    np.testing.assert_allclose(np_(states[0]), s, atol=1e-5)
    np.testing.assert_allclose(np_(out), o, atol=1e-5)
    assert np.all(np_(weights)[~MEMORY_MASK] == 0.0)


def test_luong_step_matches_the_papers_equations():
    decoder = build(
        AttentionDecoder(UNITS, cell="lstm", attention="luong_general", query="current")
    )
    randomise(decoder)
    h_prev = rng.normal(size=(B, UNITS)).astype("float32")
    c_prev = rng.normal(size=(B, UNITS)).astype("float32")
    feed_prev = rng.normal(size=(B, UNITS)).astype("float32")  # h̃_{t-1}
    y = INPUTS[:, 0]

    memory = decoder.prepare_memory(MEMORY, MEMORY_MASK)
    out, states, weights = decoder.step(y, [h_prev, c_prev, feed_prev], memory)

    # h_t = LSTM([y_{t-1}; h̃_{t-1}], h_{t-1}); score = h_tᵀ W_a h_s (general)
    h, c_cell = lstm_reference(
        np.concatenate([y, feed_prev], -1), h_prev, c_prev, decoder.cell
    )
    keys = MEMORY @ np_(decoder.attention.key_dense.kernel)  # (B, S, units)
    a = softmax_masked(np.einsum("bd,bsd->bs", h, keys), MEMORY_MASK)
    ctx = np.einsum("bs,bsd->bd", a, MEMORY)
    # h̃_t = tanh(W_c [c_t; h_t])
    h_tilde = np.tanh(
        np.concatenate([ctx, h], -1) @ np_(decoder.attention_dense.kernel)
    )

    np.testing.assert_allclose(np_(weights), a, atol=1e-5)
    np.testing.assert_allclose(np_(states[0]), h, atol=1e-5)
    np.testing.assert_allclose(np_(states[1]), c_cell, atol=1e-5)
    np.testing.assert_allclose(np_(out), h_tilde, atol=1e-5)
    np.testing.assert_allclose(np_(states[2]), h_tilde, atol=1e-5)  # fed next


def step_loop(decoder, inputs, memory, mask, initial_state):
    """Drives the public `step` in a Python loop: the generation driver."""
    mem = decoder.prepare_memory(memory, mask)
    states = decoder.get_initial_state(inputs.shape[0], initial_state)
    outputs, alignments = [], []
    for t in range(inputs.shape[1]):
        out, states, weights = decoder.step(inputs[:, t], states, mem)
        outputs.append(np_(out))
        alignments.append(np_(weights))
    return np.stack(outputs, 1), np.stack(alignments, 1)


@pytest.mark.parametrize(
    "cell,attention,query,input_feeding,fast",
    [
        ("gru", "bahdanau", "previous", True, False),
        ("lstm", "luong_dot", "current", True, False),
        ("gru", "luong_concat", "current", False, True),  # fast path
        ("lstm", "luong_general", "current", False, True),  # fast path
        ("lstm", "bahdanau", "previous", False, True),  # fast path, s_{t-1} queries
        ("gru", "luong_general", "current", False, False),  # scan, no feeding
    ],
)
def test_sequence_call_equals_step_by_step(cell, attention, query, input_feeding, fast):
    units = D_MEM if attention == "luong_dot" else UNITS
    decoder = AttentionDecoder(
        units,
        cell=cell,
        attention=attention,
        query=query,
        input_feeding=input_feeding,
        use_fast_path=fast,
    )
    initial = [
        rng.normal(size=(B, units)).astype("float32")
        for _ in range(2 if cell == "lstm" else 1)
    ]
    outputs, alignments = decoder(
        INPUTS, MEMORY, initial_state=initial, memory_mask=MEMORY_MASK
    )
    assert decoder._fast == fast
    want_out, want_align = step_loop(decoder, INPUTS, MEMORY, MEMORY_MASK, initial)
    np.testing.assert_allclose(np_(outputs), want_out, atol=2e-5)
    np.testing.assert_allclose(np_(alignments), want_align, atol=2e-5)
    if not input_feeding:  # the other driver gives the same numbers
        decoder.use_fast_path = not fast
        other_out, other_align = decoder(
            INPUTS, MEMORY, initial_state=initial, memory_mask=MEMORY_MASK
        )
        np.testing.assert_allclose(np_(other_out), np_(outputs), atol=2e-5)
        np.testing.assert_allclose(np_(other_align), np_(alignments), atol=2e-5)


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_recurrence_kernels_match_the_stock_layer(layer_cls):
    # `run_rnn` picks a faster kernel per backend; it must compute the layer.
    layer = layer_cls(UNITS, return_sequences=True)
    layer.build((None, None, D_IN))
    randomise(layer)
    n = 2 if layer_cls is keras.layers.LSTM else 1
    initial = [rng.normal(size=(B, UNITS)).astype("float32") for _ in range(n)]
    want = np_(layer(INPUTS, initial_state=initial))
    got = run_rnn(layer, ops.convert_to_tensor(INPUTS), initial, training=True)
    np.testing.assert_allclose(np_(got), want, atol=1e-5)


def test_cell_instance_matches_the_named_cell():
    named = build(AttentionDecoder(UNITS, cell="gru", attention="luong_general"))
    randomise(named)
    instance = build(
        AttentionDecoder(cell=keras.layers.GRUCell(UNITS), attention="luong_general")
    )
    assert instance.units == UNITS
    instance.set_weights(named.get_weights())
    for decoder in (named, instance):
        decoder.outputs_ = decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    np.testing.assert_allclose(
        np_(instance.outputs_[0]), np_(named.outputs_[0]), atol=1e-5
    )


def test_memory_mask_hides_padded_positions_at_every_step():
    decoder = AttentionDecoder(UNITS, cell="gru", attention="bahdanau")
    out, align = decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    align = np_(align)
    assert np.all(align[~np.broadcast_to(MEMORY_MASK[:, None], align.shape)] == 0)
    np.testing.assert_allclose(align.sum(-1), 1.0, atol=1e-5)
    # What sits at padded positions cannot change the result.
    noisy = MEMORY.copy()
    noisy[~MEMORY_MASK] = 100.0
    out2, _ = decoder(INPUTS, noisy, memory_mask=MEMORY_MASK)
    np.testing.assert_allclose(np_(out2), np_(out), atol=1e-5)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_target_mask_from_keras_masking(input_feeding):
    ids = np.array([[3, 4, 5, 6], [3, 4, 0, 0], [7, 0, 0, 0]], dtype="int32")
    tokens = keras.Input((None,), dtype="int32")
    memory = keras.Input((S, D_MEM))
    embedded = keras.layers.Embedding(10, D_IN, mask_zero=True)(tokens)
    decoder = AttentionDecoder(
        UNITS, cell="lstm", attention="luong_general", input_feeding=input_feeding
    )
    outputs, alignments = decoder(embedded, memory)
    model = keras.Model([tokens, memory], [outputs, alignments])
    out, align = (np_(x) for x in model.predict([ids, MEMORY], verbose=0))
    padded = ids == 0
    assert np.all(out[padded] == 0) and np.all(align[padded] == 0)
    assert np.all(np.abs(out[~padded]).sum(-1) > 0)
    np.testing.assert_allclose(align[~padded].sum(-1), 1.0, atol=1e-5)
    # Post-padding: real positions do not depend on the padded ones.
    ids2 = np.where(padded, 9, ids)
    out_unmasked = np_(model.predict([ids2, MEMORY], verbose=0)[0])
    np.testing.assert_allclose(out_unmasked[~padded], out[~padded], atol=1e-5)


def test_multi_head_attention_is_accepted():
    mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    decoder = AttentionDecoder(UNITS, cell="gru", attention=mha, input_feeding=True)
    assert decoder.query == "current"
    out, align = decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    align = np_(align)
    assert out.shape == (B, T, UNITS) and align.shape == (B, T, S)
    np.testing.assert_allclose(align.sum(-1), 1.0, atol=1e-5)
    assert np.all(align[~np.broadcast_to(MEMORY_MASK[:, None], align.shape)] < 1e-6)


def test_concat_readout_outputs_h_and_c_and_symbolic_shapes():
    decoder = AttentionDecoder(
        UNITS, cell="gru", attention="luong_general", attention_layer_size="concat"
    )
    out, align = decoder(INPUTS, MEMORY)
    assert decoder.output_size == UNITS + D_MEM
    assert out.shape == (B, T, UNITS + D_MEM)
    # [h_t; c_t]: the context is the weighted sum of the memory.
    ctx = np.einsum("bts,bsd->btd", np_(align), MEMORY)
    np.testing.assert_allclose(np_(out)[..., UNITS:], ctx, atol=1e-5)
    symbolic = decoder(keras.Input((None, D_IN)), keras.Input((None, D_MEM)))
    assert tuple(symbolic[0].shape) == (None, None, UNITS + D_MEM)
    assert tuple(symbolic[1].shape) == (None, None, None)
    assert decoder.compute_output_shape((2, 3, D_IN), (2, 5, D_MEM)) == (
        (2, 3, UNITS + D_MEM),
        (2, 3, 5),
    )


def test_no_attention_layer_outputs_and_feeds_back_the_context():
    # tfa's default `attention_layer_size=None`: o_t = c_t, output and fed back.
    decoder = AttentionDecoder(
        UNITS, cell="gru", attention="luong_general", attention_layer_size=None
    )
    out, align = decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    assert decoder.output_size == D_MEM and decoder.attention_dense is None
    ctx = np.einsum("bts,bsd->btd", np_(align), MEMORY)
    np.testing.assert_allclose(np_(out), ctx, atol=1e-5)
    # The GRU's kernel takes [x_t; c_{t-1}].
    assert tuple(decoder.cell.kernel.shape) == (D_IN + D_MEM, 3 * UNITS)


def test_configs_saved_with_the_old_meaning_of_none_still_concatenate():
    config = AttentionDecoder(UNITS, attention_layer_size=None).get_config()
    for key in ("attention_activation", "attention_layer", "output_attention"):
        del config[key]
    decoder = AttentionDecoder.from_config(config)
    assert decoder.attention_layer_size == "concat"


def test_keras_file_round_trip(tmp_path):
    tokens = keras.Input((None, D_IN))
    memory = keras.Input((None, D_MEM))
    decoder = AttentionDecoder(
        cell=keras.layers.LSTMCell(UNITS),
        attention=LuongAttention(score="concat", units=5),
        input_feeding=True,
        attention_layer_size=6,
    )
    model = keras.Model([tokens, memory], decoder(tokens, memory))
    randomise(model)
    want = [np_(x) for x in model([INPUTS, MEMORY])]
    path = os.path.join(tmp_path, "decoder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    got = [np_(x) for x in loaded([INPUTS, MEMORY])]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    config = loaded.layers[-1].get_config()
    assert config["attention"]["config"]["score"] == "concat"
    assert config["attention_layer_size"] == 6


def test_get_config_round_trip():
    decoder = AttentionDecoder(
        12, cell="lstm", attention="luong_concat", input_feeding=False
    )
    clone = AttentionDecoder.from_config(decoder.get_config())
    for key in ("units", "query", "input_feeding", "attention_layer_size"):
        assert getattr(clone, key) == getattr(decoder, key)
    assert clone.get_config() == decoder.get_config()


def test_training_lowers_the_loss_and_updates_every_weight():
    # The step path (input feeding, scan); the fast path is a stock RNN layer.
    # Pointer task: at step t, emit the source token at the position asked for.
    # Memory: one-hot token and one-hot position; query input: one-hot position.
    vocab, n = 6, 256
    data = np.random.default_rng(1)
    source = data.integers(0, vocab, size=(n, S))
    positions = data.integers(0, S, size=(n, T))
    targets = np.take_along_axis(source, positions, axis=1)
    eye_v, eye_s = np.eye(vocab, dtype="float32"), np.eye(S, dtype="float32")
    memory = np.concatenate([eye_v[source], np.broadcast_to(eye_s, (n, S, S))], axis=-1)
    queries = eye_s[positions]
    mem_in = keras.Input((S, vocab + S))
    query_in = keras.Input((T, S))
    decoder = AttentionDecoder(16, cell="gru", attention="luong_general")
    outputs, _ = decoder(query_in, mem_in)
    logits = keras.layers.Dense(vocab)(outputs)
    model = keras.Model([mem_in, query_in], logits)
    model.compile(
        keras.optimizers.Adam(0.03),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = [np_(w).copy() for w in decoder.trainable_weights]
    history = model.fit([memory, queries], targets, batch_size=64, epochs=10, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    for w, b in zip(decoder.trainable_weights, before):
        assert not np.allclose(np_(w), b), w.path


def test_mixed_precision_is_finite():
    keras.config.set_dtype_policy("mixed_bfloat16")
    decoder = AttentionDecoder(UNITS, cell="lstm", attention="bahdanau")
    out, align = decoder(INPUTS, MEMORY, memory_mask=MEMORY_MASK)
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert np.all(np.isfinite(np_(ops.cast(out, "float32"))))
    np.testing.assert_allclose(np_(ops.cast(align, "float32")).sum(-1), 1.0, atol=2e-2)
    assert np.all(np_(ops.cast(align, "float32"))[:, :, 3:][1] == 0)


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="cell="):
        AttentionDecoder(8, cell="rnn")
    with pytest.raises(ValueError, match="units="):
        AttentionDecoder(cell="gru")
    with pytest.raises(ValueError, match="must match"):
        AttentionDecoder(4, cell=keras.layers.GRUCell(8))
    with pytest.raises(ValueError, match="attention="):
        AttentionDecoder(8, attention="luong_cosine")
    with pytest.raises(ValueError, match="query="):
        AttentionDecoder(8, query="next")
    with pytest.raises(ValueError, match="attention_layer_size="):
        AttentionDecoder(8, attention_layer_size=0)
    decoder = AttentionDecoder(UNITS, cell="lstm")
    with pytest.raises(ValueError, match="initial_state"):
        decoder(INPUTS, MEMORY, initial_state=[np.zeros((B, UNITS), "float32")])
    with pytest.raises(ValueError, match="memory.shape"):
        decoder(INPUTS, MEMORY[:, 0])


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_recurrence_kernels_run_a_backwards_layer_forward_in_time(layer_cls):
    # The backward half of a Bidirectional (go_backwards=True) run by `run_rnn`
    # reads the steps in order, as the same weights in a forward layer do.
    backwards = layer_cls(UNITS, return_sequences=True, go_backwards=True)
    forwards = layer_cls(UNITS, return_sequences=True)
    backwards.build((None, None, D_IN))
    forwards.build((None, None, D_IN))
    randomise(backwards)
    forwards.set_weights(backwards.get_weights())
    got = run_rnn(backwards, ops.convert_to_tensor(INPUTS), training=True)
    np.testing.assert_allclose(np_(got), np_(forwards(INPUTS)), atol=1e-5)


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_recurrence_kernels_apply_input_dropout_as_the_stock_layer(layer_cls):
    # Input dropout stays on the fused kernel (applied to the inputs first):
    # the same mask as the layer draws from the same seed state, so the same
    # outputs; a new mask at each call.
    layer = layer_cls(UNITS, return_sequences=True, dropout=0.5, seed=7)
    layer.build((None, None, D_IN))
    assert rnn_kind(layer) is not None  # the fused kernel's path
    randomise(layer)
    seeds = layer.cell.seed_generator.state
    start = np_(seeds)
    want = np_(layer(INPUTS, training=True))
    seeds.assign(start)
    inputs = ops.convert_to_tensor(INPUTS)
    got = np_(run_rnn(layer, inputs, training=True))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert not np.allclose(np_(run_rnn(layer, inputs, training=True)), got)
    assert not np.allclose(got, np_(layer(INPUTS, training=False)), atol=1e-3)
