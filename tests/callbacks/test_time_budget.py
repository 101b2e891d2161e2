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


class FakeClock:
    """Stands in for the `time` module: each training batch takes `step` s."""

    def __init__(self, step):
        self.now = 1000.0
        self.step = step

    def time(self):
        return self.now


class Tick(keras.callbacks.Callback):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def on_train_batch_end(self, batch, logs=None):
        self.clock.now += self.clock.step


class Biases(keras.callbacks.Callback):
    """The Dense layer's bias after every epoch."""

    def __init__(self):
        super().__init__()
        self.values = []

    def on_epoch_end(self, epoch, logs=None):
        self.values.append(
            float(keras.ops.convert_to_numpy(self.model.layers[0].bias)[0])
        )


def test_decays_the_learning_rate_linearly_over_the_budget(monkeypatch):
    from keras_rnnattn.callbacks import time_budget

    clock = FakeClock(step=1.0)
    monkeypatch.setattr(time_budget, "time", clock)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    # The loss is the mean output, so the bias's gradient is 1 at every step
    # and each SGD step lowers the bias by exactly that step's learning rate.
    model.compile(
        optimizer=keras.optimizers.SGD(0.3), loss=lambda y, p: keras.ops.mean(p)
    )
    budget = TimeBudget(minutes=1.0, decay_learning_rate=True)  # 60 batches of 1 s
    biases = Biases()
    model.fit(
        np.ones((40, 2)),
        np.ones((40, 1)),
        batch_size=4,  # 10 batches an epoch: 10 s
        epochs=20,
        verbose=0,
        shuffle=False,
        callbacks=[Tick(clock), budget, biases],
    )
    # The first epoch takes 10 s, so 6 fit in 60 s: 0.3 * (6, 5, ..., 1) / 6
    # an epoch; the seventh is stopped after its first batch, at 61 s.
    rates = [0.3 * k / 6 for k in (6, 5, 4, 3, 2, 1)]
    drops = -np.diff([0.0] + biases.values)
    np.testing.assert_allclose(drops[:6], [10 * r for r in rates], rtol=1e-5)
    assert budget.stopped and budget.planned_epochs == 7
    np.testing.assert_allclose(drops[6], 0.3 / 7, rtol=1e-5)  # one batch at 1/7


def test_decay_refuses_a_schedule():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    model.compile(optimizer=keras.optimizers.SGD(schedule), loss="mse")
    with pytest.raises(ValueError, match="give the optimizer a number"):
        model.fit(
            np.ones((8, 2)),
            np.ones((8, 1)),
            verbose=0,
            callbacks=[TimeBudget(minutes=1, decay_learning_rate=True)],
        )
