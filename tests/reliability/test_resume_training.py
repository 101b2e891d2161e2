"""Training interrupted mid-epoch resumes with BackupAndRestore to the uninterrupted weights."""

import keras
import numpy as np
import pytest

from keras_rnnattn.models import AttentionClassifier, Translator
from keras_rnnattn.text import CharTokenizer

EPOCHS = 4
CRASH_EPOCH, CRASH_STEP = 2, 1  # 0-based: the third epoch, after its second step
DIGITS = CharTokenizer().fit(["0123456789"])


class Crash(Exception):
    """The simulated fault (a preempted machine, a killed process)."""


class CrashAt(keras.callbacks.Callback):
    """Raises `Crash` after step `step` of epoch `epoch`, once."""

    def __init__(self, epoch, step):
        super().__init__()
        self.epoch, self.step, self.current = epoch, step, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == self.step:
            raise Crash(f"simulated fault at epoch {self.epoch}, step {self.step}")


def classifier_task(seed):
    keras.utils.set_random_seed(seed)
    model = AttentionClassifier(
        vocabulary_size=20, num_classes=3, embedding_dim=8, units=8
    )
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    rng = np.random.default_rng(0)
    x = rng.integers(1, 20, size=(64, 7)).astype("int32")
    x[:8, 5:] = 0  # some padding
    y = (x[:, 0] % 3).astype("int32")
    return model, x, y


def translator_task(seed):
    keras.utils.set_random_seed(seed)
    model = Translator(DIGITS, DIGITS, embedding_dim=8, units=8)
    model.compile()  # Adam with global gradient clipping
    rng = np.random.default_rng(0)
    sources = ["".join(map(str, rng.integers(0, 10, size=k))) for k in (3, 4, 5) * 16]
    x, y = model.encode_pairs(sources, [s[::-1] for s in sources])
    return model, x, y


def weights(model):
    return [np.array(keras.ops.convert_to_numpy(w)) for w in model.weights]


@pytest.mark.parametrize(
    "task",
    [classifier_task, pytest.param(translator_task, marks=pytest.mark.slow)],
)
def test_interrupted_training_resumes_to_the_same_weights(task, tmp_path):
    backup = str(tmp_path / "backup")
    fit = dict(batch_size=16, epochs=EPOCHS, shuffle=False, verbose=0)

    # Uninterrupted.
    model, x, y = task(seed=1)
    history = model.fit(x, y, **fit)
    expected = weights(model)

    # Interrupted in the middle of an epoch: the process "dies".
    model, x, y = task(seed=1)
    with pytest.raises(Crash):
        model.fit(
            x,
            y,
            callbacks=[
                keras.callbacks.BackupAndRestore(backup),
                CrashAt(CRASH_EPOCH, CRASH_STEP),
            ],
            **fit,
        )

    # A new process: a model with other initial weights, restored from the
    # backup of the last finished epoch; the interrupted epoch runs again.
    model, x, y = task(seed=2)
    resumed = model.fit(
        x, y, callbacks=[keras.callbacks.BackupAndRestore(backup)], **fit
    )
    assert len(resumed.history["loss"]) == EPOCHS - CRASH_EPOCH
    np.testing.assert_allclose(
        resumed.history["loss"], history.history["loss"][CRASH_EPOCH:], rtol=1e-5
    )
    got = weights(model)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        # Bit-identical on TensorFlow, JAX and torch on CPU (measured); the
        # tolerance is for other hardware, where kernels may be non-deterministic.
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert sum(int(np.array_equal(a, b)) for a, b in zip(got, expected)) == len(got)
