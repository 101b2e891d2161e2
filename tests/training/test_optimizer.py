"""adam_with_ema: Adam with clipped gradients and an average of the weights,
checked step by step against Adam, clipping and the average in NumPy."""

import doctest

import keras
import numpy as np
import pytest

from keras_rnnattn.training import BudgetCallbacks, adam_with_ema, fit_best
from keras_rnnattn.training import optimizer as optimizer_module


def numpy_adam_with_ema(x, y, steps, rate, ema, clipnorm, batch, fits=1):
    """Dense(1) on mean squared error: Adam (Keras's form, epsilon 1e-7), each
    gradient clipped to norm `clipnorm`, and the average of the weights (from
    the first step's weights on), over `fits` calls of `fit` of `steps` steps
    each; at the end of each but the last, the weights become the average (as
    `fit` leaves them). Returns the weights and their average."""
    params = np.zeros(2)  # kernel, bias
    m, v, average = np.zeros(2), np.zeros(2), None
    for t in range(1, steps * fits + 1):
        if t > 1 and (t - 1) % steps == 0:
            params = average.copy()  # the previous fit's end
        start = (t - 1) % (len(x) // batch) * batch
        rows = slice(start, start + batch)  # batches in order
        error = params[0] * x[rows] + params[1] - y[rows]
        for i, g in enumerate([2 * np.mean(error * x[rows]), 2 * np.mean(error)]):
            g = g * clipnorm / max(abs(g), clipnorm)  # the norm of one number
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g**2
            alpha = rate * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
            params[i] -= alpha * m[i] / (np.sqrt(v[i]) + 1e-7)
        average = (
            params.copy() if average is None else ema * average + (1 - ema) * params
        )
    return params, average


def test_learns_a_line_and_validates_the_average():
    """Two epochs of two steps: after each epoch the model holds the average
    (validated, kept, returned); the numbers are those of NumPy."""
    x = np.linspace(-1, 1, 8).astype("float32")
    y = 3 * x + 1  # gradients of norm > 0.5: the clipping acts
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.layers[0].set_weights([np.zeros((1, 1), "float32"), np.zeros(1, "float32")])
    model.compile(optimizer=adam_with_ema(0.1, ema=0.5, clipnorm=0.5), loss="mse")
    metrics = fit_best(
        model,
        x[:, None],
        y[:, None],
        batch_size=4,
        shuffle=False,
        epochs=2,
        validation_data=(x[:, None], y[:, None]),
        verbose=0,
        callbacks=BudgetCallbacks(minutes=60, swap_ema=True, decay_learning_rate=False),
    )
    weights, average = numpy_adam_with_ema(x, y, 4, 0.1, 0.5, 0.5, batch=4)
    kernel, bias = model.layers[0].get_weights()
    np.testing.assert_allclose([kernel[0, 0], bias[0]], average, rtol=1e-5)
    assert np.max(np.abs(average - weights)) > 1e-3  # the average, not the last
    val_loss = np.mean((average[0] * x + average[1] - y) ** 2)
    np.testing.assert_allclose(metrics["best_val_loss"], val_loss, rtol=1e-5)


def test_fits_again_after_writing_the_average_into_the_weights():
    # `fit` ends by writing the average into the weights; a second `fit`
    # trains on from there, the average and Adam's moments going on. (With
    # Keras's own Adam on JAX the weight and its average were one buffer and
    # the second `fit` failed, losing the weights.)
    x = np.linspace(-1, 1, 8).astype("float32")
    y = 3 * x + 1
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.layers[0].set_weights([np.zeros((1, 1), "float32"), np.zeros(1, "float32")])
    model.compile(optimizer=adam_with_ema(0.1, ema=0.5, clipnorm=0.5), loss="mse")
    after = []
    for _ in range(2):
        model.fit(x[:, None], y[:, None], batch_size=4, shuffle=False, verbose=0)
        kernel, bias = model.layers[0].get_weights()
        after.append([kernel[0, 0], bias[0]])
    for fits, weights in enumerate(after, start=1):
        _, average = numpy_adam_with_ema(x, y, 2, 0.1, 0.5, 0.5, batch=4, fits=fits)
        np.testing.assert_allclose(weights, average, rtol=1e-5)
    assert np.max(np.abs(np.subtract(after[1], after[0]))) > 1e-2


def test_learns_a_tiny_task_without_an_average():
    x = np.linspace(-1, 1, 32).reshape(-1, 1).astype("float32")
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=adam_with_ema(0.1), loss="mse")
    first = float(model.evaluate(x, 2 * x - 1, verbose=0))
    model.fit(x, 2 * x - 1, epochs=40, batch_size=8, verbose=0)
    assert float(model.evaluate(x, 2 * x - 1, verbose=0)) < first / 100
    assert not model.optimizer.use_ema


@pytest.mark.parametrize("ema", [1.0, -0.1, True, 1.5])
def test_refuses_an_average_momentum_outside_zero_to_one(ema):
    with pytest.raises(ValueError, match="in \\[0, 1\\)"):
        adam_with_ema(1e-3, ema=ema)


def test_global_clipping_instead_of_per_variable():
    optimizer = adam_with_ema(1e-3, clipnorm=None, global_clipnorm=5.0)
    assert optimizer.clipnorm is None and optimizer.global_clipnorm == 5.0


def test_docstring_example_runs():
    result = doctest.testmod(optimizer_module)
    assert result.attempted > 0 and result.failed == 0
