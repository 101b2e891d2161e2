"""A callback that stops training when a wall-clock budget is spent."""

import math
import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops training once `minutes` of wall-clock time have passed.

    Checked after every training batch, so training ends within one batch of
    the budget; the epoch in progress is cut short. The recipes in
    `applications/` use it to stay within their time limit (with
    `keras.callbacks.EarlyStopping(restore_best_weights=True)` beside it, the
    best epoch's weights can be restored afterwards).

    With `decay_learning_rate=True` it also sets the optimizer's learning rate
    at the start of every epoch so that it falls linearly to almost zero over
    the epochs that fit in the budget, the budget-aware linear schedule of
    Li, Yumer & Ramanan (2020), "Budgeted Training: Rethinking Deep Neural
    Network Training Under Resource Constraints". Epoch `k` (from 0) of a run
    planned at `K` epochs trains at `initial * (K - k) / K`, where `K` is
    re-estimated before every epoch as the epochs already run plus those that
    still fit in the time left at the mean epoch time so far (validation
    included); the first epoch trains at the initial learning rate and the
    rate never rises. A clock-limited run trained this way ends at a low
    learning rate instead of wherever the clock happens to stop it.

    Args:
        minutes: float > 0, the training time allowed.
        decay_learning_rate: bool, whether to decay the learning rate
            linearly over the budget (the optimizer's learning rate must be a
            number, not a `LearningRateSchedule`). Defaults to `False`.

    Attributes:
        stopped: bool, whether this callback stopped the training.
        planned_epochs: int or None, the last estimate of `K` (with
            `decay_learning_rate=True`).

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    >>> budget = TimeBudget(minutes=60, decay_learning_rate=True)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
    ...               callbacks=[budget])
    >>> budget.stopped
    False
    >>> float(model.optimizer.learning_rate) < 0.1  # the second epoch's rate
    True
    """

    def __init__(self, minutes, decay_learning_rate=False):
        super().__init__()
        if not isinstance(minutes, (int, float)) or minutes <= 0:
            raise ValueError(
                f"`minutes` must be a number > 0. Received: minutes={minutes!r}"
            )
        self.seconds = float(minutes) * 60.0
        self.decay_learning_rate = bool(decay_learning_rate)
        self.start = None
        self.stopped = False
        self.planned_epochs = None
        self._epochs_begun = 0
        self._initial_learning_rate = None

    def on_train_begin(self, logs=None):
        self.start = time.time()
        self.stopped = False
        self.planned_epochs = None
        self._epochs_begun = 0
        if self.decay_learning_rate:
            # Keras keeps a schedule (not settable) where it keeps the rate.
            learning_rate = getattr(self.model.optimizer, "_learning_rate", None)
            if isinstance(
                learning_rate, keras.optimizers.schedules.LearningRateSchedule
            ):
                raise ValueError(
                    "`TimeBudget(decay_learning_rate=True)` sets the learning "
                    "rate itself: give the optimizer a number as its learning "
                    f"rate, not the schedule {learning_rate!r}, or pass "
                    "`decay_learning_rate=False`."
                )
            self._initial_learning_rate = float(self.model.optimizer.learning_rate)

    def on_epoch_begin(self, epoch, logs=None):
        done = self._epochs_begun
        self._epochs_begun += 1
        if not self.decay_learning_rate or done == 0:
            return
        elapsed = time.time() - self.start
        left = max(self.seconds - elapsed, 0.0)
        fit = max(1, math.floor(left / (elapsed / done)))  # epochs still to run
        self.planned_epochs = done + fit
        rate = self._initial_learning_rate * fit / self.planned_epochs
        current = float(self.model.optimizer.learning_rate)
        self.model.optimizer.learning_rate = min(rate, current)

    def get_state(self):
        """The budget's position as a JSON-able dict: the seconds spent and the
        epochs begun, and the learning-rate schedule's initial rate and last
        plan. A resumed training run gives it back to `set_state`."""
        return {
            "seconds_spent": time.time() - self.start if self.start else 0.0,
            "epochs_begun": self._epochs_begun,
            "initial_learning_rate": self._initial_learning_rate,
            "planned_epochs": self.planned_epochs,
        }

    def set_state(self, state):
        """Goes on from `get_state()`'s dict, as if training had not stopped
        (call it after `on_train_begin`, which starts a fresh budget)."""
        self.start = time.time() - float(state["seconds_spent"])
        self._epochs_begun = int(state["epochs_begun"])
        if state["initial_learning_rate"] is not None:
            self._initial_learning_rate = float(state["initial_learning_rate"])
        self.planned_epochs = state["planned_epochs"]

    def on_train_batch_end(self, batch, logs=None):
        if time.time() - self.start > self.seconds:
            self.model.stop_training = True
            self.stopped = True
