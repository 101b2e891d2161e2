"""A callback that stops training when a wall-clock budget is spent."""

import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops training once `minutes` of wall-clock time have passed.

    Checked after every training batch, so training ends within one batch of
    the budget; the epoch in progress is cut short. The recipes in
    `applications/` use it to stay within their time limit (with
    `keras.callbacks.EarlyStopping(restore_best_weights=True)` beside it, the
    best epoch's weights can be restored afterwards).

    Args:
        minutes: float > 0, the training time allowed.

    Attributes:
        stopped: bool, whether this callback stopped the training.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> budget = TimeBudget(minutes=60)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
    ...               callbacks=[budget])
    >>> budget.stopped
    False
    """

    def __init__(self, minutes):
        super().__init__()
        if not isinstance(minutes, (int, float)) or minutes <= 0:
            raise ValueError(
                f"`minutes` must be a number > 0. Received: minutes={minutes!r}"
            )
        self.seconds = float(minutes) * 60.0
        self.start = None
        self.stopped = False

    def on_train_begin(self, logs=None):
        self.start = time.time()
        self.stopped = False

    def on_train_batch_end(self, batch, logs=None):
        if time.time() - self.start > self.seconds:
            self.model.stop_training = True
            self.stopped = True
