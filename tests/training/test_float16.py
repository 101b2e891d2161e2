"""round_to_float16: the weights in memory as a float16 preset stores them."""

import doctest

import keras
import numpy as np
import pytest

from keras_rnnattn.models import AttentionClassifier
from keras_rnnattn.text import WordTokenizer
from keras_rnnattn.training import float16 as float16_module
from keras_rnnattn.training import round_to_float16


class WithCounter(keras.layers.Layer):
    """A Dense-like layer with an integer variable beside its float weights."""

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 3))
        self.count = self.add_weight(
            shape=(2,), dtype="int32", trainable=False, initializer="zeros"
        )

    def call(self, x):
        return x @ self.kernel


def test_rounds_like_numpy_and_leaves_integers_alone():
    model = keras.Sequential([keras.Input((4,)), WithCounter(), keras.layers.Dense(2)])
    rng = np.random.default_rng(0)
    values = [rng.normal(size=w.shape).astype(w.dtype) for w in model.get_weights()]
    values[1] = np.array([70001, -3], "int32")  # not a float16 number
    model.set_weights(values)
    round_to_float16(model)
    for got, before in zip(model.get_weights(), values):
        assert got.dtype == before.dtype
        if before.dtype.kind == "f":
            np.testing.assert_array_equal(
                got, before.astype("float16").astype("float32")
            )
            assert not np.array_equal(got, before)  # normal draws are not float16
        else:
            np.testing.assert_array_equal(got, before)


def test_refuses_weights_beyond_float16_and_changes_nothing():
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(2)])
    values = [np.array([[0.1, 1e5]], "float32"), np.array([1 / 3, 0.0], "float32")]
    model.set_weights(values)
    with pytest.raises(ValueError, match="beyond float16's range.*weights_dtype=None"):
        round_to_float16(model)
    for got, before in zip(model.get_weights(), values):
        np.testing.assert_array_equal(got, before)


def test_the_model_in_memory_is_the_float16_preset(tmp_path):
    texts = ["a good film", "a bad film", "good", "bad"]
    model = AttentionClassifier(
        tokenizer=WordTokenizer().fit(texts),
        labels=["negative", "positive"],
        embedding_dim=4,
        units=4,
    )
    model.classify(texts)  # builds it
    round_to_float16(model)
    _, probabilities = model.classify(texts)
    model.save_to_preset(tmp_path / "preset", weights_dtype="float16")
    loaded = AttentionClassifier.from_preset(str(tmp_path / "preset"))
    for got, expected in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(loaded.classify(texts)[1], probabilities)


def test_docstring_example_runs():
    result = doctest.testmod(float16_module)
    assert result.attempted > 0 and result.failed == 0
