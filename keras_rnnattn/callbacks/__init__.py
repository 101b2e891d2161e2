"""Training callbacks."""

from keras_rnnattn.callbacks.time_budget import TimeBudget

__all__ = ["TimeBudget"]
