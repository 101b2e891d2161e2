import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers import recurrent
from keras_rnnattn.layers.recurrent import Bidirectional as RightPadded
from tests.reliability.gradients import loss_and_gradients

B, S, D, UNITS = 4, 6, 5, 3
rng = np.random.default_rng(0)
X = rng.normal(size=(B, S, D)).astype("float32")
LENGTHS = np.array([6, 4, 1, 3])  # a full row, a one-step row
MASK = np.arange(S)[None, :] < LENGTHS[:, None]  # (B, S), padding at the end
TARGET = rng.normal(size=(B, S, 2 * UNITS)).astype("float32")


@pytest.fixture(autouse=True)
def unmasked(monkeypatch):
    """The unmasked path on every backend (by default only torch takes it)."""
    monkeypatch.setattr(recurrent, "own_rnn_kernels", lambda: True)


def pair(layer_cls):
    """A stock masked `Bidirectional` and ours with the same weights."""
    stock = keras.layers.Bidirectional(layer_cls(UNITS, return_sequences=True))
    ours = RightPadded(layer_cls(UNITS, return_sequences=True))
    stock.build((None, None, D))
    ours.build((None, None, D))
    for w in stock.weights:  # biases too, so every term matters
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    ours.set_weights(stock.get_weights())
    return stock, ours


def reference(stock):
    """Each direction run alone on each row cut to its length (NumPy-side slicing)."""
    out = np.zeros((B, S, 2 * UNITS), "float32")
    for b, n in enumerate(LENGTHS):
        row = X[b : b + 1, :n]
        forward = ops.convert_to_numpy(stock.forward_layer(row))[0]
        # The backward layer reads from the end; its outputs come in reading order.
        backward = ops.convert_to_numpy(stock.backward_layer(row))[0][::-1]
        out[b, :n] = np.concatenate([forward, backward], axis=-1)
    return out


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_matches_the_masked_layer_and_each_row_alone(layer_cls):
    stock, ours = pair(layer_cls)
    want = ops.convert_to_numpy(stock(X, mask=MASK))
    got = ops.convert_to_numpy(ours(X, mask=MASK))
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(got, reference(stock), atol=1e-5)
    assert np.all(got[~MASK] == 0.0)


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_gradients_match_the_masked_layer(layer_cls):
    stock, ours = pair(layer_cls)

    def loss(layer):
        def fn():
            out = layer(ops.convert_to_tensor(X), mask=ops.convert_to_tensor(MASK))
            return ops.sum(ops.square(out - ops.convert_to_tensor(TARGET))), out

        return fn

    want_loss, want_grads, _ = loss_and_gradients(stock, loss(stock))
    got_loss, got_grads, _ = loss_and_gradients(ours, loss(ours))
    assert got_loss == pytest.approx(want_loss, rel=1e-5)
    assert len(got_grads) == len(want_grads) == 6  # kernel, recurrent, bias x 2
    for got, want in zip(got_grads, want_grads):
        assert np.abs(want).max() > 0  # every weight is reached
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_weights_and_config_round_trip_through_a_keras_file(tmp_path):
    _, ours = pair(keras.layers.GRU)
    inputs = keras.Input((None, D))
    mask = keras.Input((None,), dtype="bool")
    model = keras.Model([inputs, mask], ours(inputs, mask=mask))
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.layers[-1], RightPadded)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(loaded([X, MASK])), ops.convert_to_numpy(model([X, MASK]))
    )


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_gru_and_lstm_match_keras_layers(cell):
    # Outputs and gradients of the models' GRU / LSTM (PyTorch's fused kernel
    # where `own_rnn_kernels` holds) against Keras's layer with the same weights.
    stock_cls = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    stock = stock_cls(UNITS, return_sequences=True)
    ours = recurrent.recurrent_layer(cell, UNITS, name="rnn")
    assert isinstance(ours, stock_cls)
    stock.build((None, None, D))
    ours.build((None, None, D))
    for w in stock.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    ours.set_weights(stock.get_weights())
    target = ops.convert_to_tensor(TARGET[..., :UNITS])

    def loss(layer):
        def fn():
            out = layer(ops.convert_to_tensor(X))
            return ops.sum(ops.square(out - target)), out

        return fn

    want_loss, want_grads, want = loss_and_gradients(stock, loss(stock))
    got_loss, got_grads, got = loss_and_gradients(ours, loss(ours))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert got_loss == pytest.approx(want_loss, rel=1e-5)
    for g, w in zip(got_grads, want_grads):
        assert np.abs(w).max() > 0
        np.testing.assert_allclose(g, w, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_encoder_is_keras_bidirectional_without_a_config_copy(
    cell, tmp_path, monkeypatch
):
    # Keras's `Bidirectional` copies its layer through serialize_keras_object,
    # which imports TensorFlow on every backend; the models' encoder gives both
    # layers, so nothing is serialised, and it is the same layer as Keras's.
    from keras.src.saving import serialization_lib

    calls = []
    serialize = serialization_lib.serialize_keras_object
    monkeypatch.setattr(
        serialization_lib,
        "serialize_keras_object",
        lambda obj: calls.append(obj) or serialize(obj),
    )
    ours = recurrent.recurrent_encoder(cell, UNITS, True, name="encoder")
    assert calls == []
    stock_cls = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    stock = keras.layers.Bidirectional(
        stock_cls(UNITS, return_sequences=True, name=cell), name="encoder"
    )
    monkeypatch.setattr(serialization_lib, "serialize_keras_object", serialize)
    for layer in (ours, stock):
        layer.build((None, None, D))
    assert [w.path for w in ours.weights] == [w.path for w in stock.weights]
    assert ours.forward_layer.name == f"forward_{cell}"
    assert ours.backward_layer.go_backwards and not ours.forward_layer.go_backwards
    config, stock_config = ours.get_config(), stock.get_config()
    for key in ("layer", "backward_layer"):
        assert config[key]["config"] == stock_config[key]["config"]
    # Weights files written by either load into the other.
    for w in stock.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    for source, target in ((stock, ours), (ours, stock)):
        file = str(tmp_path / f"{type(source).__module__}.weights.h5")
        keras.Sequential([keras.Input((None, D)), source]).save_weights(file)
        keras.Sequential([keras.Input((None, D)), target]).load_weights(file)
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours(X, mask=MASK)),
        ops.convert_to_numpy(stock(X, mask=MASK)),
        atol=1e-5,
    )
    # From its config, the layers are used as given: still no copy.
    calls.clear()
    monkeypatch.setattr(
        serialization_lib,
        "serialize_keras_object",
        lambda obj: calls.append(obj) or serialize(obj),
    )
    again = RightPadded.from_config(config)
    assert calls == []
    assert again.forward_layer.name == f"forward_{cell}"
