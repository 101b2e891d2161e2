"""The record of how a preset's weights were trained: one entry per training call."""

import datetime
import os

import keras

from keras_rnnattn._backend import accelerator_name


def describe_device():
    """Where this process trains: the accelerator's name, or the CPU and its cores.

    Returns:
        str, such as `"NVIDIA H100 80GB HBM3"` or `"CPU, 1 core"` (the cores
        this process may run on).

    Example:

    >>> describe_device()  # on a CPU-only machine  # doctest: +ELLIPSIS
    'CPU, ... core...'
    """
    name = accelerator_name()
    if name:
        return name
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    cores = cores or os.cpu_count() or 1
    return f"CPU, {cores} core{'s' if cores > 1 else ''}"


def call_record(start_weights, seconds, epochs, best_val_loss):
    """One training call's entry in a preset's `"training_history"`.

    Args:
        start_weights: str, where the call's weights came from (`"fresh"`,
            `"preset misaki_us_g2p"`, `"resumed at epoch 5"`).
        seconds: float, the call's training time.
        epochs: `(first, last)` epoch numbers (from 1) the call trained, or
            None when it trained none.
        best_val_loss: float or None, the run's best validation value so far.

    Returns:
        dict with `date`, `start_weights`, `minutes`, `device`, `backend`,
        `epochs` and `best_val_loss`.

    Example:

    >>> record = call_record("fresh", 90.0, (1, 3), 0.25)
    >>> record["minutes"], record["epochs"], record["best_val_loss"]
    (1.5, [1, 3], 0.25)
    """
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "start_weights": start_weights,
        "minutes": round(float(seconds) / 60.0, 1),
        "device": describe_device(),
        # A record of where the weights were trained, not a branch.
        "backend": keras.config.backend(),
        "epochs": list(epochs) if epochs else None,
        "best_val_loss": None if best_val_loss is None else float(best_val_loss),
    }


def training_history(metadata):
    """A preset's training history: its metrics' `"training_history"`, or one
    entry made from the metrics of a preset written before histories were kept.

    Args:
        metadata: dict, a preset's `metadata.json`.

    Returns:
        list of dicts, one per training call, oldest first (empty when the
        metadata says nothing of its training).

    Example:

    >>> training_history({"metrics": {"train_seconds": 3000, "epochs_run": 5,
    ...                               "best_val_loss": 0.19}})[0]["epochs"]
    [1, 5]
    """
    metrics = metadata.get("metrics", {})
    if metrics.get("training_history"):
        return list(metrics["training_history"])
    if "train_seconds" not in metrics:
        return []
    epochs = metrics.get("epochs_run")
    return [
        {
            "date": str(metadata.get("date", ""))[:16] or None,
            "start_weights": "fresh",
            "minutes": round(float(metrics["train_seconds"]) / 60.0, 1),
            "device": "CPU (cores not recorded)",
            "backend": metadata.get("backend"),
            "epochs": [1, int(epochs)] if epochs else None,
            "best_val_loss": metrics.get("best_val_loss"),
        }
    ]
