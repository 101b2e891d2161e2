"""TimeBudget stops training within one batch of its budget."""

import time

import keras
import numpy as np
import pytest

from keras_rnnattn.callbacks import TimeBudget


class SlowBatches(keras.callbacks.Callback):
    """Counts batches and makes each take at least `seconds`."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        time.sleep(self.seconds)


def fit(budget, slow):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    x, y = np.ones((40, 2)), np.ones((40, 1))
    return model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[slow, budget])


def test_stops_after_the_budget_and_not_before():
    slow = SlowBatches(0.05)
    budget = TimeBudget(minutes=0.1 / 60)  # 0.1 s: two or three batches
    history = fit(budget, slow)
    assert budget.stopped
    assert 2 <= slow.batches <= 4
    assert len(history.history["loss"]) == 1

    slow = SlowBatches(0.0)
    budget = TimeBudget(minutes=10)
    history = fit(budget, slow)
    assert not budget.stopped
    assert slow.batches == 30 and len(history.history["loss"]) == 3


@pytest.mark.parametrize("minutes", [0, -1, "5", None])
def test_bad_budget(minutes):
    with pytest.raises(ValueError, match="`minutes` must be a number > 0"):
        TimeBudget(minutes)
