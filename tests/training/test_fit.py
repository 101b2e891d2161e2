"""fit_best and BudgetCallbacks: the budget stops training, the best epoch's
weights come back (checked by value), and the run's metrics."""

import doctest
import time

import keras
import numpy as np
import pytest

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.training import BudgetCallbacks, fit_best
from keras_rnnattn.training import budget_callbacks as budget_callbacks_module
from keras_rnnattn.training import fit as fit_module


class Recorder(keras.callbacks.Callback):
    """The weights and the validation loss at each epoch's end, as early
    stopping sees them (it runs after the schedule's callbacks)."""

    def __init__(self, sleep_after_epoch=None, budget=None):
        super().__init__()
        self.weights, self.val_losses, self.logs = [], [], []
        self.sleep_after_epoch, self.budget = sleep_after_epoch, budget

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())
        self.val_losses.append(logs["val_loss"])
        self.logs.append(dict(logs))
        if epoch == self.sleep_after_epoch:  # the clock runs out now
            left = self.budget.start + self.budget.seconds - time.time()
            time.sleep(max(left, 0.0) + 0.05)


def diverging_fit(callbacks, epochs):
    """Trained towards 2x, validated against -2x: every epoch's validation
    loss is worse than the one before, so the first epoch is the best."""
    x = np.linspace(-1, 1, 32).reshape(-1, 1).astype("float32")
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    metrics = fit_best(
        model,
        x,
        2 * x,
        validation_data=(x, -2 * x),
        batch_size=8,
        epochs=epochs,
        verbose=0,
        callbacks=callbacks,
    )
    return model, metrics


def assert_weights_equal(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_the_budget_stops_training_and_the_best_epoch_comes_back():
    recorder = Recorder(sleep_after_epoch=1)
    # Epochs 0 and 1 (compiling included) take well under 5 s; then the
    # recorder sleeps past the budget.
    run = BudgetCallbacks(minutes=5 / 60, patience=10, schedule=[recorder])
    recorder.budget = run.budget
    model, metrics = diverging_fit(run, epochs=20)
    # Stopped in the first batch of epoch 2, which Keras still validates.
    assert run.budget.stopped and metrics["stopped_by_time_budget"]
    assert metrics["epochs_run"] == 3 == len(recorder.weights)
    assert recorder.val_losses[0] < recorder.val_losses[1] < recorder.val_losses[2]
    assert_weights_equal(model.get_weights(), recorder.weights[0])
    assert metrics["best_val_loss"] == pytest.approx(recorder.val_losses[0])
    assert not np.array_equal(recorder.weights[0][0], recorder.weights[-1][0])


def test_a_run_that_ends_as_planned_keeps_its_best_epoch():
    recorder = Recorder()
    run = BudgetCallbacks(minutes=10, patience=5, schedule=[recorder])
    model, metrics = diverging_fit(run, epochs=3)
    assert not metrics["stopped_by_time_budget"] and metrics["epochs_run"] == 3
    assert_weights_equal(model.get_weights(), recorder.weights[0])


def test_early_stopping_ends_training_at_its_patience():
    recorder = Recorder()
    run = BudgetCallbacks(minutes=10, patience=2, schedule=[recorder])
    model, metrics = diverging_fit(run, epochs=20)
    assert metrics["epochs_run"] == 3 and not metrics["stopped_by_time_budget"]
    assert_weights_equal(model.get_weights(), recorder.weights[0])


def test_a_monitor_where_higher_is_better():
    x = np.linspace(-1, 1, 32).reshape(-1, 1).astype("float32")
    labels = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(2)])
    model.compile(
        keras.optimizers.SGD(0.5),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    recorder = Recorder()
    run = BudgetCallbacks(
        minutes=10, monitor="val_accuracy", mode="max", schedule=[recorder]
    )
    metrics = fit_best(
        model, x, labels, validation_data=(x, labels[::-1]), batch_size=8,
        epochs=4, verbose=0, callbacks=run,
    )  # fmt: skip
    accuracies = [logs["val_accuracy"] for logs in recorder.logs]
    assert metrics["epochs_run"] == 4
    assert metrics["best_val_accuracy"] == pytest.approx(max(accuracies))
    best = int(np.argmax(accuracies))  # the first of the best
    assert_weights_equal(model.get_weights(), recorder.weights[best])


def test_callbacks_in_the_order_fit_runs_them():
    plateau = keras.callbacks.ReduceLROnPlateau()
    run = BudgetCallbacks(minutes=1, swap_ema=True, schedule=[plateau])
    assert [type(c) for c in run.callbacks] == [
        TimeBudget,
        keras.callbacks.ReduceLROnPlateau,
        keras.callbacks.SwapEMAWeights,
        keras.callbacks.EarlyStopping,
    ]
    assert run.callbacks[0] is run.budget and run.callbacks[-1] is run.stop
    assert run.budget.decay_learning_rate and run.stop.restore_best_weights


def test_bad_arguments_say_what_to_pass():
    with pytest.raises(ValueError, match="list of Keras callbacks"):
        BudgetCallbacks(minutes=1, schedule=["plateau"])
    with pytest.raises(ValueError, match="'auto', 'min' or 'max'"):
        BudgetCallbacks(minutes=1, mode="largest")
    with pytest.raises(ValueError, match="minutes"):
        BudgetCallbacks(minutes=0)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="BudgetCallbacks"):
        fit_best(model, np.ones((2, 1)), np.ones((2, 1)), callbacks=[])


@pytest.mark.parametrize("module", [budget_callbacks_module, fit_module])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
