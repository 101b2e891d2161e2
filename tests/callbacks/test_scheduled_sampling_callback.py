"""ScheduledSampling: the decays of Bengio et al. (2015), and p moved during fit."""

import doctest
import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.callbacks import ScheduledSampling
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer


def test_schedules_are_the_papers_decays():
    # Bengio et al. 2015, section 2.4: eps_i = max(eps, k - c i), k^i,
    # k / (k + exp(i / k)); the callback sets p = 1 - eps_i.
    steps = [0, 1, 2, 5, 10, 50, 100, 1000, 10**6]
    linear = ScheduledSampling("linear", k=1.0, c=0.01, epsilon_min=0.2)
    exponential = ScheduledSampling("exponential", k=0.99)
    sigmoid = ScheduledSampling("inverse_sigmoid", k=20.0)
    for i in steps:
        eps = {
            linear: max(0.2, 1.0 - 0.01 * i),
            exponential: 0.99**i,
            sigmoid: 20.0 / (20.0 + math.exp(min(i / 20.0, 700))),
        }
        for schedule, want in eps.items():
            assert schedule.teacher_forcing_probability(i) == pytest.approx(want)
            assert schedule.sampling_probability(i) == pytest.approx(1.0 - want)
    assert sigmoid.sampling_probability(10**6) == 1.0  # no overflow
    # k > 1 holds teacher forcing (eps capped at 1) for (k - 1) / c steps.
    late = ScheduledSampling("linear", k=1.5, c=0.1)
    assert [late.sampling_probability(i) for i in (0, 5)] == [0.0, 0.0]
    assert late.sampling_probability(10) == pytest.approx(0.5)
    assert ScheduledSampling("linear", c=0.5).sampling_probability(3) == 1.0
    custom = ScheduledSampling(lambda i: min(1.0, i / 4))
    assert custom.sampling_probability(2) == 0.5
    assert custom.teacher_forcing_probability(2) == 0.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(schedule="cosine"), "schedule='cosine'"),
        (dict(schedule="linear"), "c=None"),
        (dict(schedule="linear", c=-0.1), "c=-0.1"),
        (dict(schedule="linear", c=0.1, k=0), "k=0"),
        (dict(schedule="linear", c=0.1, epsilon_min=1.5), "epsilon_min=1.5"),
        (dict(schedule="exponential"), "k=None"),
        (dict(schedule="exponential", k=1.0), "0 < k < 1"),
        (dict(schedule="inverse_sigmoid", k=0.5), "k >= 1"),
        (dict(schedule="exponential", k=0.9, c=0.1), "`c` does not apply"),
        (dict(schedule="linear", c="fast"), "c='fast'"),
        (dict(schedule=lambda i: 0.5, k=2.0), "`k` does not apply"),
        (dict(schedule="linear", c=0.1, per="batch"), "per='batch'"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ScheduledSampling(**kwargs)


def test_a_callable_must_return_a_probability():
    with pytest.raises(ValueError, match=r"schedule\(3\) = 1.5"):
        ScheduledSampling(lambda i: i / 2).sampling_probability(3)


class ProbabilityModel(keras.Model):
    """A model whose prediction is its `sampling_probability`: the loss against
    0 (mean squared error) is p², the p the compiled step read."""

    def __init__(self):
        super().__init__()
        self.sampling_probability = self.add_weight(
            shape=(), initializer="zeros", trainable=False, name="p"
        )
        self.w = self.add_weight(shape=(), initializer="zeros", name="w")

    def call(self, x):
        return x[:, :1] * 0.0 + self.w + self.sampling_probability


@pytest.mark.parametrize("per", ["step", "epoch"])
def test_fit_moves_the_variable_that_training_reads(per):
    model = ProbabilityModel()
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    schedule = ScheduledSampling("exponential", k=0.5, per=per)
    x, y = np.ones((6, 1), "float32"), np.zeros((6, 1), "float32")
    losses = []

    class Losses(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(logs["loss"])  # the epoch's mean so far

    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[schedule, Losses()])
    # Three batches an epoch; i counts steps, or epochs.
    i = np.arange(6) if per == "step" else np.repeat([0, 1], 3)
    p = 1.0 - 0.5**i
    running = [np.mean(p[e * 3 : e * 3 + b + 1] ** 2) for e in (0, 1) for b in range(3)]
    np.testing.assert_allclose(losses, running, atol=1e-6)
    assert schedule.probability == p[-1]
    assert float(ops.convert_to_numpy(model.sampling_probability)) == p[-1]
    # A second fit continues the step count (the optimizer's iterations).
    if per == "step":
        model.fit(x[:2], y[:2], verbose=0, callbacks=[schedule])
        assert schedule.probability == 1.0 - 0.5**6


def test_refuses_a_model_without_scheduled_sampling():
    tok = CharTokenizer().fit(["0123456789"])
    model = Translator(tok, tok, embedding_dim=4, units=4)
    model.compile()
    x, y = model.encode_pairs(["12"], ["21"])
    with pytest.raises(ValueError, match=r"scheduled_sampling=True"):
        model.fit(x, y, verbose=0, callbacks=[ScheduledSampling("exponential", k=0.9)])


def test_docstring_examples_run():
    from keras_rnnattn.callbacks import scheduled_sampling

    result = doctest.testmod(scheduled_sampling)
    assert result.attempted >= 6 and result.failed == 0
