"""The callbacks of a training run on a wall-clock budget."""

import keras

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.training.call_budget import CallBudget


class BudgetCallbacks:
    """A wall-clock budget, early stopping and the swap to averaged weights.

    The callbacks a training run on a time budget passes to `fit`, in the
    order `fit` runs them:

    1. `budget`, a `TimeBudget(minutes, decay_learning_rate)`: stops training
       within one batch once the budget is spent, and (by default) decays the
       learning rate linearly over the epochs that fit in it.
    2. the callbacks of `schedule`, if any (a learning-rate schedule such as
       `keras.callbacks.ReduceLROnPlateau`).
    3. with `call_minutes`, a `CallBudget(call_minutes)`: ends this call of
       a longer run (`TrainingRun`) at the last epoch's end that fits.
    4. with `swap_ema=True`, `keras.callbacks.SwapEMAWeights(swap_on_epoch=True)`:
       from each epoch's end on, the model holds the optimizer's average of
       the weights (`adam_with_ema(ema=...)`), so the average is validated,
       kept by early stopping and shipped.
    5. `stop`, `keras.callbacks.EarlyStopping(monitor, patience,
       restore_best_weights=True)`: it ends training when `monitor` has not
       improved for `patience` epochs and keeps the best epoch's weights,
       which `fit_best` puts back into the model however training ended.

    Args:
        minutes: float > 0, the training time allowed.
        patience: int, epochs without improvement before early stopping.
            Defaults to 3.
        swap_ema: bool, whether the optimizer keeps an average of the weights
            to validate and ship. Defaults to `False`.
        decay_learning_rate: bool, `TimeBudget`'s linear decay of the learning
            rate over the budget. Defaults to `True`.
        schedule: a list of other callbacks run after the budget (a
            learning-rate schedule). Defaults to none.
        monitor: str, the quantity early stopping watches. Defaults to
            `"val_loss"`.
        mode: `"auto"`, `"min"` or `"max"`, as `EarlyStopping`'s (`"auto"`:
            the largest accuracy, else the smallest value).
        call_minutes: float > 0 or None, this call's time when `minutes` is
            the budget of a run over several calls. Defaults to none.

    Attributes:
        budget: the `TimeBudget`.
        call: the `CallBudget`, or None.
        swap: the `SwapEMAWeights`, or None.
        stop: the `EarlyStopping`.
        callbacks: list, all of them in order, for `fit(callbacks=...)`.

    Example:

    >>> import numpy as np
    >>> from keras_rnnattn.training import adam_with_ema
    >>> run = BudgetCallbacks(minutes=60, patience=2)
    >>> [type(c).__name__ for c in run.callbacks]
    ['TimeBudget', 'EarlyStopping']
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=adam_with_ema(0.01, ema=0.9), loss="mse")
    >>> run = BudgetCallbacks(minutes=60, swap_ema=True)
    >>> x, y = np.ones((8, 2)), np.ones((8, 1))
    >>> _ = model.fit(x, y, validation_data=(x, y), epochs=2, verbose=0,
    ...               callbacks=run.callbacks)
    >>> run.budget.stopped, run.stop.best_weights is not None
    (False, True)
    """

    def __init__(
        self,
        minutes,
        patience=3,
        swap_ema=False,
        decay_learning_rate=True,
        schedule=(),
        monitor="val_loss",
        mode="auto",
        call_minutes=None,
    ):
        schedule = list(schedule)
        for callback in schedule:
            if not isinstance(callback, keras.callbacks.Callback):
                raise ValueError(
                    "`schedule` must be a list of Keras callbacks (such as "
                    "`keras.callbacks.ReduceLROnPlateau(...)`). Received: an "
                    f"item {callback!r}"
                )
        if mode not in ("auto", "min", "max"):
            raise ValueError(
                f"`mode` must be 'auto', 'min' or 'max'. Received: mode={mode!r}"
            )
        self.budget = TimeBudget(minutes, decay_learning_rate=decay_learning_rate)
        self.stop = keras.callbacks.EarlyStopping(
            monitor=monitor, patience=patience, restore_best_weights=True, mode=mode
        )
        self.call = CallBudget(call_minutes) if call_minutes is not None else None
        self.swap = (
            keras.callbacks.SwapEMAWeights(swap_on_epoch=True) if swap_ema else None
        )
        optional = [c for c in (self.call, self.swap) if c is not None]
        self.callbacks = [self.budget, *schedule, *optional, self.stop]
