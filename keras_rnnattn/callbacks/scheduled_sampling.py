"""A callback that moves a model's scheduled-sampling probability over training."""

import math
import numbers

import keras
from keras import ops

SCHEDULES = ("linear", "exponential", "inverse_sigmoid")
PER = ("step", "epoch")


class ScheduledSampling(keras.callbacks.Callback):
    """Decays the teacher-forcing probability of scheduled sampling.

    Bengio et al. (2015), "Scheduled Sampling for Sequence Prediction with
    Recurrent Neural Networks": at training step i the decoder is fed the gold
    token with probability ε_i and its own sampled token otherwise, ε_i
    decaying from 1 (teacher forcing) as training goes on. This callback sets
    the model's `sampling_probability` variable to p = 1 − ε_i before every
    training batch (or epoch), with the paper's decays:

    - `"linear"`: ε_i = max(ε_min, k − c·i), with `k` (default 1) and the
      slope `c` > 0; ε is at most 1, so k > 1 teacher-forces the first
      (k − 1) / c steps.
    - `"exponential"`: ε_i = k^i, with 0 < k < 1.
    - `"inverse_sigmoid"`: ε_i = k / (k + exp(i / k)), with k >= 1 (the
      larger k, the longer ε stays near 1).

    A callable `schedule(i) -> p` gives p itself (a float in [0, 1]).

    i is the optimizer's step count (`model.optimizer.iterations`, so a
    resumed training picks up where it was) with `per="step"`, the default;
    with `per="epoch"`, the epoch index from 0 (as `fit` numbers epochs, so
    `initial_epoch` continues the schedule), set at the start of each epoch.
    The model is one built with scheduled sampling, such as
    `Translator(..., scheduled_sampling=True)`: any model with a scalar
    `sampling_probability` variable that its training step reads. The
    variable changes between compiled steps without recompiling.

    Args:
        schedule: `"linear"`, `"exponential"`, `"inverse_sigmoid"`, or a
            callable `i -> p`.
        k: float, the decay's k (see above); `"linear"` defaults to 1,
            `"exponential"` and `"inverse_sigmoid"` need it.
        c: float > 0, the slope of `"linear"` (needed there, only there).
        epsilon_min: float in [0, 1], the floor ε_min of `"linear"` (only
            there); default 0.
        per: `"step"` or `"epoch"`, what i counts.

    Attributes:
        probability: float or None, the last p set.

    Example:

    >>> from keras_rnnattn.models import Translator
    >>> from keras_rnnattn.text import CharTokenizer
    >>> tok = CharTokenizer().fit(["0123456789"])
    >>> model = Translator(tok, tok, embedding_dim=8, units=16,
    ...                    scheduled_sampling=True)
    >>> model.compile()
    >>> x, y = model.encode_pairs(["123", "45"], ["321", "54"])
    >>> schedule = ScheduledSampling("inverse_sigmoid", k=10.0)
    >>> round(schedule.sampling_probability(0), 4)  # 1 - 10 / (10 + e^0)
    0.0909
    >>> _ = model.fit(x, y, batch_size=1, epochs=2, verbose=0,
    ...               callbacks=[schedule])
    >>> round(schedule.probability, 4) == round(schedule.sampling_probability(3), 4)
    True
    """

    def __init__(self, schedule, k=None, c=None, epsilon_min=None, per="step"):
        super().__init__()
        if per not in PER:
            raise ValueError(f"`per` must be one of {PER}. Received: per={per!r}")
        if not callable(schedule) and schedule not in SCHEDULES:
            raise ValueError(
                f"`schedule` must be one of {SCHEDULES} or a callable "
                f"`step -> probability`. Received: schedule={schedule!r}"
            )
        given = {"k": k, "c": c, "epsilon_min": epsilon_min}
        takes = {
            "linear": ("k", "c", "epsilon_min"),
            "exponential": ("k",),
            "inverse_sigmoid": ("k",),
        }.get(schedule, ())
        name = repr(schedule) if isinstance(schedule, str) else "a callable"
        for arg, value in given.items():
            if value is None:
                continue
            if arg not in takes:
                raise ValueError(
                    f"`{arg}` does not apply to the schedule {name}, which takes "
                    f"{', '.join(takes) or 'no argument'}. Received: {arg}={value!r}"
                )
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"`{arg}` must be a number. Received: {arg}={value!r}")
        if schedule == "linear":
            k = 1.0 if k is None else k
            epsilon_min = 0.0 if epsilon_min is None else epsilon_min
            if c is None or not c > 0:
                raise ValueError(
                    "The linear schedule needs its slope `c` > 0 (ε_i = "
                    f"max(ε_min, k - c i)). Received: c={c!r}"
                )
            if not k > 0:
                raise ValueError(f"`k` must be > 0 for 'linear'. Received: k={k!r}")
            if not 0.0 <= epsilon_min <= 1.0:
                raise ValueError(
                    "`epsilon_min` must be in [0, 1]. "
                    f"Received: epsilon_min={epsilon_min!r}"
                )
        elif schedule == "exponential" and (k is None or not 0.0 < k < 1.0):
            raise ValueError(
                f"The exponential schedule ε_i = k^i needs 0 < k < 1. Received: k={k!r}"
            )
        elif schedule == "inverse_sigmoid" and (k is None or not k >= 1.0):
            raise ValueError(
                "The inverse sigmoid schedule ε_i = k / (k + exp(i / k)) needs "
                f"k >= 1. Received: k={k!r}"
            )
        self.schedule = schedule
        self.k = None if k is None else float(k)
        self.c = None if c is None else float(c)
        self.epsilon_min = None if epsilon_min is None else float(epsilon_min)
        self.per = per
        self.probability = None

    def teacher_forcing_probability(self, i):
        """ε_i, the probability of feeding the gold token at step (or epoch) i.

        For a callable schedule, 1 − `schedule(i)`.
        """
        if callable(self.schedule):
            return 1.0 - self.sampling_probability(i)
        if self.schedule == "linear":
            return min(1.0, max(self.epsilon_min, self.k - self.c * i))
        if self.schedule == "exponential":
            return self.k**i
        # exp overflows a float past 709; ε is 0 to float precision long before.
        return self.k / (self.k + math.exp(min(i / self.k, 700.0)))

    def sampling_probability(self, i):
        """p = 1 − ε_i at step (or epoch) i: what the callback sets."""
        if not callable(self.schedule):
            return 1.0 - self.teacher_forcing_probability(i)
        p = self.schedule(i)
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise ValueError(
                "A callable schedule must return a probability in [0, 1]. "
                f"Received: schedule({i}) = {p!r}"
            )
        return float(p)

    def set_model(self, model):
        variable = getattr(model, "sampling_probability", None)
        if not isinstance(variable, keras.Variable):
            raise ValueError(
                "ScheduledSampling sets the model's `sampling_probability` "
                f"variable, and this {type(model).__name__} has none: build "
                "the model with scheduled sampling on, for example "
                "`Translator(..., scheduled_sampling=True)`."
            )
        super().set_model(model)

    # `self.model` (Keras's `Callback.model`) first attaches JAX's training
    # state to the variables, so the next step reads the value assigned here.
    def _set(self, i):
        self.probability = self.sampling_probability(i)
        self.model.sampling_probability.assign(self.probability)

    def on_epoch_begin(self, epoch, logs=None):
        if self.per == "epoch":
            self._set(epoch)

    def on_train_batch_begin(self, batch, logs=None):
        if self.per == "step":
            step = int(ops.convert_to_numpy(self.model.optimizer.iterations))
            self._set(step)
