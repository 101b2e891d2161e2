"""A callback that ends one call of a longer training run at an epoch's end."""

import time

import keras


class CallBudget(keras.callbacks.Callback):
    """Ends training at the last epoch's end that fits in `minutes`.

    A long run made of several calls (`TrainingRun`, `--resume`) checkpoints
    at each epoch's end, so a call that ended mid-epoch would repeat that
    epoch's start next time. This callback stops training after an epoch
    when the next one would not fit in the time left (at the mean epoch time
    so far, validation included); past the budget all the same (a first
    epoch longer than the budget, a slower epoch) it stops within one batch,
    as `TimeBudget` does.

    Unlike `TimeBudget`, which spends a run's whole budget and decays the
    learning rate over it, this one limits only the present call: the
    schedule goes on where it stopped when the run resumes.

    Args:
        minutes: float > 0, this call's time.

    Attributes:
        stopped: bool, whether this callback stopped the training.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> budget = CallBudget(minutes=60)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
    ...               callbacks=[budget])
    >>> budget.stopped
    False
    """

    def __init__(self, minutes):
        super().__init__()
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
            raise ValueError(f"`minutes` must be a number > 0. Received: {minutes!r}")
        if minutes <= 0:
            raise ValueError(f"`minutes` must be a number > 0. Received: {minutes!r}")
        self.seconds = float(minutes) * 60.0
        self.stopped = False
        self._start = None
        self._epochs = 0

    def on_train_begin(self, logs=None):
        self._start = time.time()
        self._epochs = 0
        self.stopped = False

    def on_epoch_end(self, epoch, logs=None):
        self._epochs += 1
        elapsed = time.time() - self._start
        if elapsed + elapsed / self._epochs > self.seconds:
            self.model.stop_training = True
            self.stopped = True

    def on_train_batch_end(self, batch, logs=None):
        if time.time() - self._start > self.seconds:
            self.model.stop_training = True
            self.stopped = True
