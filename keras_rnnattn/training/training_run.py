"""A training run's folder: a checkpoint at every epoch's end, to resume and to average."""

import json
import os
import time

import keras
import numpy as np

from keras_rnnattn._backend import global_rng_state, set_global_rng_state
from keras_rnnattn._keras_private import ema_weights_in_model, set_ema_weights_in_model
from keras_rnnattn.presets import save_model_weights

RUN_FILE = "run.json"
EPOCHS_FOLDER = "epochs"


class TrainingRun:
    """The folder where a training run keeps what it needs to go on.

    `fit_best(..., run=TrainingRun(folder))` writes a checkpoint at the end
    of every whole epoch: every variable of the model (random seeds
    included) and of its optimizer (Adam's moments, the weights' average),
    the backend's global random generator where Keras draws from it,
    the epoch, the schedule's position (`TimeBudget`'s clock and plan, the
    learning rate), early stopping's best epoch and its weights, which
    weights `SwapEMAWeights` left in the model, and the state of the
    training data's order (`LengthBucketedBatches.get_state`). A run stopped
    by `CallBudget` or killed goes on with `TrainingRun(folder,
    resume=True)` from its last whole epoch, with the same weights (to float
    tolerance) as a run that was never stopped; an epoch cut short is run
    again from its start.

    The weights of the last `keep_last` epochs stay in `epochs/` as
    `.weights.h5` files for `average_weights`; `run.json` records the
    options the run was started with, each epoch's logs and each call (see
    `call_record`).

    Args:
        folder: str or path, the run's folder (made if absent).
        resume: bool, go on with the run in `folder` (it must hold one);
            without, `folder` must not hold a run yet. Defaults to `False`.
        keep_last: int >= 1, how many epochs' weights to keep. Defaults to 1.
        options: JSON-able, recorded with a new run (a recipe's options, to
            resume with the same); ignored on resume.
        start_weights: str, what the run's first call started from
            (`"fresh"`, `"preset misaki_us_g2p"`), for its history.
        history: list of dicts, the training history of the weights the run
            starts from (a preset's, see `training_history`), kept in front
            of the run's own calls.

    Attributes:
        folder: str, the absolute path.
        epochs_done: int, the whole epochs trained so far.
        options: the options recorded when the run started.

    Example:

    >>> import tempfile
    >>> from keras_rnnattn.training import BudgetCallbacks, fit_best
    >>> folder = tempfile.mkdtemp()
    >>> x = np.linspace(-1, 1, 16).reshape(-1, 1).astype("float32")
    >>> def model():
    ...     keras.utils.set_random_seed(1)
    ...     m = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    ...     m.compile(optimizer="adam", loss="mse")
    ...     return m
    >>> first = model()
    >>> _ = fit_best(first, x, 2 * x, validation_data=(x, 2 * x), epochs=2,
    ...              verbose=0, shuffle=False, callbacks=BudgetCallbacks(60),
    ...              run=TrainingRun(folder))
    >>> resumed, run = model(), TrainingRun(folder, resume=True)
    >>> run.epochs_done
    2
    >>> metrics = fit_best(resumed, x, 2 * x, validation_data=(x, 2 * x),
    ...                    epochs=3, verbose=0, shuffle=False,
    ...                    callbacks=BudgetCallbacks(60), run=run)
    >>> metrics["epochs_run"], len(metrics["training_history"])
    (3, 2)
    """

    def __init__(
        self,
        folder,
        resume=False,
        keep_last=1,
        options=None,
        start_weights="fresh",
        history=(),
    ):
        if (
            isinstance(keep_last, bool)
            or not isinstance(keep_last, int)
            or keep_last < 1
        ):
            raise ValueError(
                f"`keep_last` must be an int >= 1. Received: {keep_last!r}"
            )
        self.folder = os.path.abspath(os.fspath(folder))
        self.keep_last = keep_last
        path = os.path.join(self.folder, RUN_FILE)
        if resume:
            if not os.path.isfile(path):
                raise ValueError(
                    f"No training run to resume in {self.folder} (no {RUN_FILE}): "
                    "start it without `resume` (a recipe: without --resume, with "
                    f"--run-dir {folder})."
                )
            with open(path, encoding="utf-8") as file:
                self.record = json.load(file)
            self.start_weights = f"resumed at epoch {self.record['epoch']}"
        else:
            if os.path.isfile(path):
                raise ValueError(
                    f"{self.folder} holds a training run already ({RUN_FILE}): "
                    "resume it (`resume=True`, a recipe's --resume "
                    f"{folder}) or pass another folder."
                )
            self.record = {
                "options": options,
                "epoch": 0,
                "previous_history": list(history),
                "calls": [],
                "epoch_logs": [],
            }
            self.start_weights = start_weights

    @property
    def epochs_done(self):
        return int(self.record["epoch"])

    @property
    def options(self):
        return self.record["options"]

    def history(self):
        """The training history: the start weights' then each call of this run."""
        return self.record["previous_history"] + self.record["calls"]

    def epoch_files(self):
        """The kept epochs' weights files, oldest first, with their epoch numbers."""
        return [
            (epoch, os.path.join(self.folder, EPOCHS_FOLDER, name))
            for epoch, name in self.record.get("epoch_files", [])
        ]

    def checkpoint(self, callbacks, data=None):
        """The callback that restores the run (on resume) and checkpoints it.

        Args:
            callbacks: the run's `BudgetCallbacks`.
            data: the training data (its `get_state()` is kept), or None.

        Returns:
            A `keras.callbacks.Callback`, to run after all the others.
        """
        return _Checkpoint(self, callbacks, data)

    def add_call(self, record):
        """Records a finished call (`call_record`) in run.json."""
        self.record["calls"].append(record)
        self._write_record()

    # --- Files -------------------------------------------------------------------
    def _write_record(self):
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, RUN_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as file:
            json.dump(self.record, file, indent=1)
        os.replace(path + ".tmp", path)

    def save(self, epoch, model, callbacks, data, logs):
        """Writes the checkpoint of `epoch` whole epochs (`_Checkpoint` calls it)."""
        os.makedirs(os.path.join(self.folder, EPOCHS_FOLDER), exist_ok=True)
        stop = callbacks.stop
        arrays = _arrays("model", model.variables)
        arrays |= _arrays("optimizer", model.optimizer.variables)
        if stop.best_weights is not None:
            arrays |= {
                f"best/{i}": np.asarray(w) for i, w in enumerate(stop.best_weights)
            }
        arrays |= {f"rng/{k}": v for k, v in global_rng_state().items()}
        state_name = f"state_{epoch:04d}.npz"
        np.savez(os.path.join(self.folder, state_name), **arrays)
        weights_name = f"epoch_{epoch:04d}.weights.h5"
        save_model_weights(
            model, os.path.join(self.folder, EPOCHS_FOLDER, weights_name)
        )
        old_state = self.record.get("state_file")
        kept = self.record.get("epoch_files", []) + [[epoch, weights_name]]
        dropped, kept = kept[: -self.keep_last], kept[-self.keep_last :]
        best = (
            None
            if stop.best is None or not np.isfinite(stop.best)
            else float(stop.best)
        )
        self.record.update(
            epoch=epoch,
            state_file=state_name,
            epoch_files=kept,
            budget=callbacks.budget.get_state(),
            stop={
                "wait": int(stop.wait),
                "best": best,
                "best_epoch": int(stop.best_epoch),
                "stopped_epoch": int(stop.stopped_epoch),
            },
            ema_in_model=callbacks.swap is not None
            and ema_weights_in_model(callbacks.swap),
            data=data.get_state() if hasattr(data, "get_state") else None,
        )
        self.record["epoch_logs"].append(
            {"epoch": epoch, **{k: float(v) for k, v in (logs or {}).items()}}
        )
        self._write_record()  # the new checkpoint counts from here on
        for _, name in dropped:
            _remove(os.path.join(self.folder, EPOCHS_FOLDER, name))
        if old_state and old_state != state_name:
            _remove(os.path.join(self.folder, old_state))

    def restore(self, model, callbacks):
        """Gives the model, its optimizer and the callbacks the checkpoint's state."""
        if not model.optimizer.built:  # TensorFlow builds it at the first step
            model.optimizer.build(model.trainable_variables)
        with np.load(os.path.join(self.folder, self.record["state_file"])) as state:
            _assign("model", model.variables, state, self.folder)
            _assign("optimizer", model.optimizer.variables, state, self.folder)
            best = None
            if "best/0" in state:
                best = [state[f"best/{i}"] for i in range(len(model.weights))]
            set_global_rng_state(
                {k[4:]: state[k] for k in state.files if k.startswith("rng/")}
            )
        stop, saved = callbacks.stop, self.record["stop"]
        stop.wait, stop.best_epoch = saved["wait"], saved["best_epoch"]
        stop.stopped_epoch = saved["stopped_epoch"]
        if saved["best"] is not None:
            stop.best = saved["best"]
        stop.best_weights = best
        callbacks.budget.set_state(self.record["budget"])
        if callbacks.swap is not None:
            set_ema_weights_in_model(callbacks.swap, self.record["ema_in_model"])


class _Checkpoint(keras.callbacks.Callback):
    """Restores a resumed run at the start of `fit`; checkpoints whole epochs.

    Runs after all the run's other callbacks: its `on_train_begin` comes after
    theirs (which start afresh), its `on_epoch_end` after early stopping and
    the swap to averaged weights have had their say.
    """

    def __init__(self, run, callbacks, data):
        super().__init__()
        self.run, self.callbacks, self.data = run, callbacks, data
        self.started = None
        self._batches = 0

    def on_train_begin(self, logs=None):
        self.started = time.time()
        if self.run.epochs_done:
            self.run.restore(self.model, self.callbacks)
            # After `fit` began its first epoch of the data (which draws an
            # order), before it reads a batch.
            state = self.run.record.get("data")
            if state is not None and hasattr(self.data, "set_state"):
                self.data.set_state(state)

    def on_epoch_begin(self, epoch, logs=None):
        self._batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self._batches += 1

    def on_epoch_end(self, epoch, logs=None):
        steps = self.params.get("steps") if self.params else None
        if steps and self._batches < steps:
            return  # cut short: the next call runs this epoch again
        self.run.save(epoch + 1, self.model, self.callbacks, self.data, logs)


def _arrays(prefix, variables):
    return {
        f"{prefix}/{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(variables)
    }


def _assign(prefix, variables, state, folder):
    count = sum(1 for key in state.files if key.startswith(prefix + "/"))
    if count != len(variables):
        raise ValueError(
            f"The run in {folder} saved {count} {prefix} variables; this "
            f"{prefix} has {len(variables)}: resume a run with the model and "
            "optimizer it was started with (the same recipe options)."
        )
    for i, variable in enumerate(variables):
        value = state[f"{prefix}/{i}"]
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"The run in {folder} saved {variable.path} with the shape "
                f"{value.shape}; this {prefix} has {tuple(variable.shape)}: resume "
                "a run with the model it was started with (the same recipe options)."
            )
        variable.assign(value)


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
