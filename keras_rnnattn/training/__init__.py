"""The training kit: what a training run of an application model needs.

The optimizer (Adam with clipping and an average of the weights), the
callbacks of a run on a wall-clock budget, a `fit` that keeps the best epoch
and returns the run's metrics, a run's folder of checkpoints to resume it and
average its last epochs, starting from a preset's weights, the record of how
weights were trained, float16 rounding of the weights as a preset stores
them, and updates of a preset's `metadata.json`. The recipes in
`applications/` are built on it. Each name loads its module on first use,
so that `keras_rnnattn.training.processes` (thread settings for worker
processes) imports without Keras.
"""

import importlib

# Each public name and the module that defines it.
_HOMES = {
    "BudgetCallbacks": "keras_rnnattn.training.budget_callbacks",
    "CallBudget": "keras_rnnattn.training.call_budget",
    "TimeBudget": "keras_rnnattn.callbacks",
    "TrainingRun": "keras_rnnattn.training.training_run",
    "adam_with_ema": "keras_rnnattn.training.optimizer",
    "average_weights": "keras_rnnattn.training.averaging",
    "call_record": "keras_rnnattn.training.history",
    "describe_device": "keras_rnnattn.training.history",
    "fit_best": "keras_rnnattn.training.fit",
    "init_from": "keras_rnnattn.training.warm_start",
    "linear_decay": "keras_rnnattn.training.schedules",
    "round_to_float16": "keras_rnnattn.training.float16",
    "training_history": "keras_rnnattn.training.history",
    "update_metadata": "keras_rnnattn.training.metadata",
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
