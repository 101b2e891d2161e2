"""Training callbacks."""

from keras_rnnattn.callbacks.scheduled_sampling import ScheduledSampling
from keras_rnnattn.callbacks.time_budget import TimeBudget

__all__ = ["ScheduledSampling", "TimeBudget"]
