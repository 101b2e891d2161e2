"""`fit` on a time budget that keeps the best epoch and returns the run's metrics."""

import math
import time

import keras

from keras_rnnattn.training.averaging import average_weights
from keras_rnnattn.training.history import call_record


def fit_best(model, x=None, y=None, *, callbacks, run=None, **kwargs):
    """Trains `model` with a `BudgetCallbacks` and keeps its best epoch's weights.

    Runs `model.fit(x, y, callbacks=callbacks.callbacks, **kwargs)`, then
    puts the weights of the epoch with the best `monitor` back into the
    model, however training ended: early stopping, the time budget (Keras
    validates the cut-short last epoch too, so the best may be an earlier
    one) or the last planned epoch.

    With `run`, a `TrainingRun`, every whole epoch is checkpointed in the
    run's folder, a resumed run goes on from its last checkpoint (`epochs`
    counts from the run's start) with the data where it was (a dataset with
    `get_state`/`set_state`, such as `LengthBucketedBatches`, which `fit`
    then does not shuffle again), the call is added to the run's history,
    and with `TrainingRun(keep_last=K)` (K > 1) the average of the last K
    epochs' weights (`average_weights`) is kept instead of the best epoch's
    when it validates better.

    Args:
        model: a compiled Keras model.
        x, y: the training data, as `fit` takes them.
        callbacks: a `BudgetCallbacks`.
        run: a `TrainingRun`, or None.
        **kwargs: more arguments of `fit` (`validation_data`, `epochs`,
            `batch_size`, `verbose`, ...).

    Returns:
        A dict of the run's metrics: `epochs_run` (int), `best_<monitor>`
        (float, the best value early stopping saw, such as `best_val_loss`;
        None without validation), `train_seconds` (float, the time in `fit`,
        to 0.1 s) and `stopped_by_time_budget` (bool). With `run`, also
        `stopped_by_call_budget` (bool), `shipped_weights` (str: which
        weights the model holds) and `training_history` (list of dicts,
        `TrainingRun.history()`); `epochs_run` and `train_seconds` then
        count the whole run.

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
    extra = []
    if run is not None:
        if "initial_epoch" in kwargs:
            raise ValueError(
                "A `run` starts at its own epoch: leave out `initial_epoch`."
            )
        if hasattr(x, "set_state"):
            # The data draws its own order; Keras's shuffle of a PyDataset's
            # batches draws from Python's global generator, which a resumed
            # run cannot replay.
            if kwargs.get("shuffle"):
                raise ValueError(
                    "With a `run`, a dataset with its own order (such as "
                    "LengthBucketedBatches(shuffle=True)) is not shuffled again "
                    "by `fit`: leave out `shuffle=True`."
                )
            kwargs["shuffle"] = False
        kwargs["initial_epoch"] = first = run.epochs_done
        extra = [run.checkpoint(callbacks, x)]
    start = time.time()
    history = model.fit(x, y, callbacks=callbacks.callbacks + extra, **kwargs)
    train_seconds = time.time() - start
    if stop.best_weights is not None:
        model.set_weights(stop.best_weights)
    best = float(stop.best) if stop.best is not None else math.inf
    metrics = {
        "epochs_run": len(history.history.get("loss", [])),
        f"best_{stop.monitor}": best if math.isfinite(best) else None,
        "train_seconds": round(train_seconds, 1),
        "stopped_by_time_budget": budget.stopped,
    }
    if run is None:
        return metrics
    last = run.epochs_done
    metrics["epochs_run"] = last
    metrics["stopped_by_call_budget"] = (
        callbacks.call is not None and callbacks.call.stopped
    )
    metrics["shipped_weights"] = (
        f"epoch {stop.best_epoch + 1} (the best {stop.monitor})"
    )
    validation = kwargs.get("validation_data")
    if run.keep_last > 1 and validation is not None and len(run.epoch_files()) > 1:
        metrics |= _keep_better_average(
            model, run, stop, validation, kwargs.get("batch_size")
        )
    run.add_call(
        call_record(
            run.start_weights,
            train_seconds,
            (first + 1, last) if last > first else None,
            metrics[f"best_{stop.monitor}"],
        )
    )
    metrics["train_seconds"] = round(sum(c["minutes"] for c in run.history()) * 60, 1)
    metrics["training_history"] = run.history()
    return metrics


def _keep_better_average(model, run, stop, validation, batch_size):
    """Evaluates the average of the kept epochs against the model's weights on
    `validation` (as `fit` takes it) and keeps the better; returns the metrics
    that say which."""
    key = stop.monitor.removeprefix("val_")
    files = run.epoch_files()
    if isinstance(validation, (tuple, list)):
        data = dict(zip(("x", "y", "sample_weight"), validation))
    else:
        data = {"x": validation}

    def evaluate():
        logs = model.evaluate(
            **data, batch_size=batch_size, verbose=0, return_dict=True
        )
        return logs[key]

    best_weights = model.get_weights()
    single = evaluate()
    model.set_weights(average_weights([f for _, f in files], template=model))
    averaged = evaluate()
    higher_is_better = stop.monitor_op is keras.ops.greater
    better = averaged > single if higher_is_better else averaged < single
    metrics = {
        f"averaged_{stop.monitor}": round(float(averaged), 6),
        f"best_single_{stop.monitor}": round(float(single), 6),
    }
    if better:
        epochs = f"{files[0][0]}-{files[-1][0]}"
        metrics["shipped_weights"] = f"the average of epochs {epochs}"
    else:
        model.set_weights(best_weights)
    return metrics
