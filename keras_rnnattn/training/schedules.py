"""A learning-rate schedule set by the epoch, the same however a run was split."""

import keras

from keras_rnnattn._checks import positive_int


def linear_decay(learning_rate, epochs):
    """A learning rate that falls linearly over `epochs`, set by the epoch number.

    Epoch `k` (from 0) trains at `learning_rate * (epochs - k) / epochs`. The
    rate depends on the epoch alone, so a run resumed at epoch `k`
    (`TrainingRun`) trains at the rate an uninterrupted one would; a run on a
    wall-clock budget decays with `TimeBudget(decay_learning_rate=True)`
    instead.

    Args:
        learning_rate: float > 0, the first epoch's rate.
        epochs: int >= 1, the epochs the rate falls over.

    Returns:
        A `keras.callbacks.LearningRateScheduler`, for
        `BudgetCallbacks(schedule=[...], decay_learning_rate=False)`.

    Example:

    >>> schedule = linear_decay(0.1, epochs=4)
    >>> [round(schedule.schedule(k, None), 3) for k in range(4)]
    [0.1, 0.075, 0.05, 0.025]
    """
    positive_int("epochs", epochs)
    if isinstance(learning_rate, bool) or not learning_rate > 0:
        raise ValueError(
            f"`learning_rate` must be a number > 0. Received: {learning_rate!r}"
        )
    rate = float(learning_rate)
    return keras.callbacks.LearningRateScheduler(
        lambda epoch, _: rate * max(epochs - epoch, 1) / epochs
    )
