"""`run_rnn`'s kernels (PyTorch's fused call, TensorFlow's hoisted scan, JAX's
LSTM with its own backward pass) against the stock Keras layers."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn._backend import rnn_kind, run_rnn
from tests.reliability.gradients import loss_and_gradients

B, T, D_IN, UNITS = 3, 5, 6, 8
rng = np.random.default_rng(3)
INPUTS = rng.normal(size=(B, T, D_IN)).astype("float32")
WEIGHTS = rng.normal(size=(B, T, UNITS)).astype("float32")


class _Recurrence(keras.layers.Layer):
    """A stock RNN layer, its inputs and initial states as trainable weights."""

    def __init__(self, rnn, num_states):
        super().__init__()
        self.rnn = rnn
        self.rnn.build((None, None, D_IN))
        for w in self.rnn.weights:  # larger than Keras's init: saturating gates too
            w.assign(rng.normal(scale=0.7, size=w.shape).astype("float32"))
        self.x = self.add_weight(shape=(B, T, D_IN), initializer="zeros")
        self.x.assign(INPUTS)
        self.states = []
        for _ in range(num_states):
            state = self.add_weight(shape=(B, UNITS), initializer="zeros")
            state.assign(rng.normal(size=(B, UNITS)).astype("float32"))
            self.states.append(state)

    def loss(self, own_kernel):
        def fn():
            states = [s.value for s in self.states]
            if own_kernel:
                out = run_rnn(self.rnn, self.x.value, states, training=True)
            else:
                out = self.rnn(self.x.value, initial_state=states)
            # A weighted sum: every step's output gets its own gradient.
            return ops.sum(ops.sin(out) * ops.convert_to_tensor(WEIGHTS)), out

        return fn


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_gradients_match_the_stock_layer(layer_cls):
    # Every backend's kernel differentiates to the stock layer's gradients,
    # for the kernels, the bias, the inputs and the initial states.
    num_states = 2 if layer_cls is keras.layers.LSTM else 1
    model = _Recurrence(layer_cls(UNITS, return_sequences=True), num_states)
    assert rnn_kind(model.rnn) is not None
    want_loss, want_grads, want_out = loss_and_gradients(model, model.loss(False))
    got_loss, got_grads, got_out = loss_and_gradients(model, model.loss(True))
    np.testing.assert_allclose(got_out, want_out, atol=1e-5)
    assert got_loss == pytest.approx(want_loss, rel=1e-5)
    assert len(got_grads) == len(want_grads) == 4 + num_states
    for got, want in zip(got_grads, want_grads):
        assert np.abs(want).max() > 0.1  # every weight is reached
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_lstm_gradients_are_numpys_finite_differences():
    # The recurrent kernel's gradient against central differences of a NumPy LSTM.
    model = _Recurrence(keras.layers.LSTM(UNITS, return_sequences=True), 2)
    _, grads, _ = loss_and_gradients(model, model.loss(True))
    kernel, recurrent, bias = (
        ops.convert_to_numpy(w).astype("float64") for w in model.rnn.weights
    )
    h0, c0 = (ops.convert_to_numpy(s).astype("float64") for s in model.states)

    def numpy_loss(recurrent):
        h, c, total = h0, c0, 0.0
        for t in range(T):
            gates = INPUTS[:, t] @ kernel + h @ recurrent + bias
            i, f, g, o = np.split(gates, 4, axis=-1)
            sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(o) * np.tanh(c)
            total += np.sum(np.sin(h) * WEIGHTS[:, t])
        return total

    index = next(
        i for i, v in enumerate(model.trainable_variables) if v is model.rnn.weights[1]
    )
    eps = 1e-5
    for row, col in [(0, 0), (3, 9), (7, 31), (5, 17)]:
        up, down = recurrent.copy(), recurrent.copy()
        up[row, col] += eps
        down[row, col] -= eps
        want = (numpy_loss(up) - numpy_loss(down)) / (2 * eps)
        assert grads[index][row, col] == pytest.approx(want, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_other_activations_run_the_layer_itself(layer_cls):
    # The fused kernels have tanh and sigmoid built in: a layer with other
    # activations is run as it is, and `run_rnn` still computes it.
    layer = layer_cls(UNITS, return_sequences=True, activation="relu")
    layer.build((None, None, D_IN))
    assert rnn_kind(layer) is None
    assert rnn_kind(layer_cls(UNITS, recurrent_activation="hard_sigmoid")) is None
    got = run_rnn(layer, ops.convert_to_tensor(INPUTS))
    np.testing.assert_allclose(
        ops.convert_to_numpy(got), ops.convert_to_numpy(layer(INPUTS)), atol=1e-5
    )
