"""TimeBudget stops training within one batch of its budget."""

import time

import keras
import numpy as np
import pytest

from keras_rnnattn.callbacks import TimeBudget


class Sleep(keras.callbacks.Callback):
    """Makes each batch take at least `seconds` more."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)


class Clock(keras.callbacks.Callback):
    """Seconds since the budget's start at the end of each batch, read right
    after the budget's own check."""

    def __init__(self, budget):
        super().__init__()
        self.budget = budget
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        self.ends.append(time.time() - self.budget.start)


def fit(budget, sleep):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    x, y = np.ones((40, 2)), np.ones((40, 1))
    clock = Clock(budget)
    history = model.fit(
        x, y, batch_size=4, epochs=3, verbose=0, callbacks=[Sleep(sleep), budget, clock]
    )
    return history, clock.ends


def test_stops_at_the_first_batch_past_the_budget():
    budget = TimeBudget(minutes=0.5 / 60)  # 0.5 s; the first batch may compile
    history, ends = fit(budget, sleep=0.05)
    assert budget.stopped
    assert ends[-1] > budget.seconds  # it stopped once the budget was spent ...
    assert all(t <= budget.seconds + 0.01 for t in ends[:-1])  # ... and not before
    assert len(ends) < 30

    budget = TimeBudget(minutes=10)
    history, ends = fit(budget, sleep=0.0)
    assert not budget.stopped
    assert len(ends) == 30 and len(history.history["loss"]) == 3


@pytest.mark.parametrize("minutes", [0, -1, "5", None])
def test_bad_budget(minutes):
    with pytest.raises(ValueError, match="`minutes` must be a number > 0"):
        TimeBudget(minutes)
