"""The training kit: what a training run of an application model needs.

The optimizer (Adam with clipping and an average of the weights), the
callbacks of a run on a wall-clock budget, a `fit` that keeps the best epoch
and returns the run's metrics, a run's folder of checkpoints to resume it and
average its last epochs, starting from a preset's weights, the record of how
weights were trained, float16 rounding of the weights as a preset stores
them, and updates of a preset's `metadata.json`. The recipes in
`applications/` are built on it.
"""

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.training.averaging import average_weights
from keras_rnnattn.training.budget_callbacks import BudgetCallbacks
from keras_rnnattn.training.call_budget import CallBudget
from keras_rnnattn.training.fit import fit_best
from keras_rnnattn.training.float16 import round_to_float16
from keras_rnnattn.training.history import (
    call_record,
    describe_device,
    training_history,
)
from keras_rnnattn.training.metadata import update_metadata
from keras_rnnattn.training.optimizer import adam_with_ema
from keras_rnnattn.training.schedules import linear_decay
from keras_rnnattn.training.training_run import TrainingRun
from keras_rnnattn.training.warm_start import init_from

__all__ = [
    "BudgetCallbacks",
    "CallBudget",
    "TimeBudget",
    "TrainingRun",
    "adam_with_ema",
    "average_weights",
    "call_record",
    "describe_device",
    "fit_best",
    "init_from",
    "linear_decay",
    "round_to_float16",
    "training_history",
    "update_metadata",
]
