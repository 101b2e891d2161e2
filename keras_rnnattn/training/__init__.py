"""The training kit: what a training run of an application model needs.

The optimizer (Adam with clipping and an average of the weights), the
callbacks of a run on a wall-clock budget, a `fit` that keeps the best epoch
and returns the run's metrics, float16 rounding of the weights as a preset
stores them, and updates of a preset's `metadata.json`. The recipes in
`applications/` are built on it.
"""

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.training.budget_callbacks import BudgetCallbacks
from keras_rnnattn.training.fit import fit_best
from keras_rnnattn.training.float16 import round_to_float16
from keras_rnnattn.training.metadata import update_metadata
from keras_rnnattn.training.optimizer import adam_with_ema

__all__ = [
    "BudgetCallbacks",
    "TimeBudget",
    "adam_with_ema",
    "fit_best",
    "round_to_float16",
    "update_metadata",
]
