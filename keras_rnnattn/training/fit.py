"""`fit` on a time budget that keeps the best epoch and returns the run's metrics."""

import math
import time


def fit_best(model, x=None, y=None, *, callbacks, **kwargs):
    """Trains `model` with a `BudgetCallbacks` and keeps its best epoch's weights.

    Runs `model.fit(x, y, callbacks=callbacks.callbacks, **kwargs)`, then
    puts the weights of the epoch with the best `monitor` back into the
    model, however training ended: early stopping, the time budget (Keras
    validates the cut-short last epoch too, so the best may be an earlier
    one) or the last planned epoch.

    Args:
        model: a compiled Keras model.
        x, y: the training data, as `fit` takes them.
        callbacks: a `BudgetCallbacks`.
        **kwargs: more arguments of `fit` (`validation_data`, `epochs`,
            `batch_size`, `verbose`, ...).

    Returns:
        A dict of the run's metrics: `epochs_run` (int), `best_<monitor>`
        (float, the best value early stopping saw, such as `best_val_loss`;
        None without validation), `train_seconds` (float, the time in `fit`,
        to 0.1 s) and `stopped_by_time_budget` (bool).

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_rnnattn.training import BudgetCallbacks, adam_with_ema
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=adam_with_ema(0.1), loss="mse")
    >>> x = np.linspace(-1, 1, 16).reshape(-1, 1)
    >>> metrics = fit_best(model, x, 2 * x, validation_data=(x, 2 * x),
    ...                    epochs=3, verbose=0,
    ...                    callbacks=BudgetCallbacks(minutes=60))
    >>> sorted(metrics)
    ['best_val_loss', 'epochs_run', 'stopped_by_time_budget', 'train_seconds']
    >>> metrics["epochs_run"], metrics["stopped_by_time_budget"]
    (3, False)
    """
    if "callbacks" in kwargs:
        raise ValueError("Pass the callbacks as `callbacks=BudgetCallbacks(...)`.")
    if not hasattr(callbacks, "budget") or not hasattr(callbacks, "stop"):
        raise ValueError(
            "`callbacks` must be a `keras_rnnattn.training.BudgetCallbacks` (add "
            "other callbacks through its `schedule`). Received: "
            f"callbacks={callbacks!r}"
        )
    budget, stop = callbacks.budget, callbacks.stop
    start = time.time()
    history = model.fit(x, y, callbacks=callbacks.callbacks, **kwargs)
    train_seconds = time.time() - start
    if stop.best_weights is not None:
        model.set_weights(stop.best_weights)
    best = float(stop.best) if stop.best is not None else math.inf
    return {
        "epochs_run": len(history.history["loss"]),
        f"best_{stop.monitor}": best if math.isfinite(best) else None,
        "train_seconds": round(train_seconds, 1),
        "stopped_by_time_budget": budget.stopped,
    }
