"""Adam with gradient clipping and an exponential moving average of the weights."""

from keras_rnnattn.models._optimizers import InPlaceAdam


def adam_with_ema(learning_rate, ema=None, clipnorm=5.0, global_clipnorm=None):
    """Adam with clipped gradients and, optionally, averaged weights.

    With `ema`, the optimizer keeps an exponential moving average of the
    weights (Polyak averaging, `keras.optimizers.Adam(use_ema=True)`):
    `average = ema * average + (1 - ema) * weights` after every step. Training
    updates the weights as usual; `BudgetCallbacks(swap_ema=True)` puts the
    average into the model at each epoch's end, so that the average is what is
    validated, kept by early stopping and shipped.

    The optimizer is the models' default, `InPlaceAdam`: Keras's Adam, its
    update and clipping one fused kernel per weight where the backend has
    them (torch, TensorFlow), and `fit` may be called again after it wrote
    the average into the weights (on JAX too).

    Args:
        learning_rate: float, Adam's learning rate (a number, so that
            `TimeBudget(decay_learning_rate=True)` can set it).
        ema: None (default: no average), or a float in [0, 1), the momentum
            of the average (0.999 in the recipes).
        clipnorm: float or None, the largest norm of each variable's gradient.
            Defaults to 5.0.
        global_clipnorm: float or None, the largest norm of all gradients
            together (instead of `clipnorm`).

    Returns:
        A `keras.optimizers.Adam` (an `InPlaceAdam`).

    Example:

    >>> optimizer = adam_with_ema(2e-3, ema=0.999)
    >>> optimizer.use_ema, optimizer.ema_momentum, optimizer.clipnorm
    (True, 0.999, 5.0)
    >>> adam_with_ema(1e-3, clipnorm=None, global_clipnorm=5.0).use_ema
    False
    """
    if ema is not None and (isinstance(ema, bool) or not 0.0 <= ema < 1.0):
        raise ValueError(
            "`ema` must be None (no average) or the average's momentum, a "
            f"float in [0, 1) such as 0.999. Received: ema={ema!r}"
        )
    return InPlaceAdam(
        learning_rate,
        clipnorm=clipnorm,
        global_clipnorm=global_clipnorm,
        use_ema=ema is not None,
        ema_momentum=0.99 if ema is None else ema,
    )
