"""A decoder whose attention has a state exports like the others.

An `AttentionDecoder` with `LocationSensitiveAttention` (cumulative state) or
hard `LuongMonotonicAttention` (online decoding) as a `next_fn`: its decode
step, taking and returning the alignment state among the others, and its
whole greedy loop go to a SavedModel and to TFLite builtin ops, and give the
Keras results. TensorFlow only (the exporters need its graphs).
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.decoding import greedy_search
from keras_rnnattn.layers import (
    AttentionDecoder,
    LocationSensitiveAttention,
    LuongMonotonicAttention,
)
from tests.decoding.decoding_helpers import convert_and_run

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the SavedModel and TFLite writers need TensorFlow's graphs",
)

B, S, UNITS, VOCAB, EMB, LENGTH = 2, 5, 8, 9, 4, 6
END = 1


class Model:
    """A decoder over a fixed memory, as a `next_fn` and a greedy loop."""

    def __init__(self, attention):
        keras.utils.set_random_seed(4)
        rng = np.random.default_rng(4)
        self.memory = rng.normal(size=(B, S, UNITS)).astype("float32")
        self.mask = np.array([[1] * 5, [1, 1, 1, 0, 0]], bool)
        self.embedding = rng.normal(size=(VOCAB, EMB)).astype("float32")
        self.output = rng.normal(scale=2.0, size=(UNITS, VOCAB)).astype("float32")
        self.decoder = AttentionDecoder(
            UNITS, cell="gru", attention=attention, query="current"
        )
        self.decoder(np.zeros((B, 2, EMB), "float32"), self.memory)
        for weight in self.decoder.weights:
            weight.assign(rng.normal(scale=0.7, size=weight.shape))

    def initial_states(self):
        memory = self.decoder.prepare_memory(self.memory, self.mask)
        return self.decoder.get_initial_state(B, memory=memory)

    def next_fn(self, token_ids, states):
        memory = self.decoder.prepare_memory(self.memory, self.mask)
        x = ops.take(self.embedding, token_ids, axis=0)
        out, states, alignment = self.decoder.step(x, list(states), memory)
        return ops.matmul(out, self.output), states, alignment

    def greedy(self, start_ids):
        tokens, scores = greedy_search(
            self.next_fn, self.initial_states(), start_ids, END, LENGTH
        )
        return tokens, scores


def np_(x):
    return ops.convert_to_numpy(x)


MODELS = {
    "location_sensitive": lambda: LocationSensitiveAttention(
        UNITS, filters=3, kernel_size=3
    ),
    "monotonic_hard": lambda: LuongMonotonicAttention(mode="hard", score_bias_init=1.0),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_decode_step_and_greedy_export_to_saved_model(name, tmp_path):
    import tensorflow as tf

    model = Model(MODELS[name]())
    states = [np_(s) for s in model.initial_states()]
    assert states[-1].shape == (B, S)  # the alignment state is a state
    specs = [tf.TensorSpec((B,), tf.int32)] + [
        tf.TensorSpec(s.shape, tf.float32) for s in states
    ]
    module = tf.Module()
    module.decoder = model.decoder  # its variables, tracked for the export
    module.decode_step = tf.function(
        lambda token_ids, *states: model.next_fn(token_ids, states),
        input_signature=specs,
        autograph=False,
    )
    module.greedy = tf.function(
        model.greedy,
        input_signature=[tf.TensorSpec((B,), tf.int32)],
        autograph=False,
    )
    tf.saved_model.save(module, str(tmp_path / name))
    loaded = tf.saved_model.load(str(tmp_path / name))

    # Step by step through the export, the states fed back, against Keras.
    token = np.array([0, 0], "int32")
    keras_states, exported_states = model.initial_states(), states
    for _ in range(4):
        logits, keras_states, alignment = model.next_fn(token, keras_states)
        got_logits, exported_states, got_alignment = loaded.decode_step(
            tf.constant(token), *exported_states
        )
        np.testing.assert_allclose(got_logits.numpy(), np_(logits), atol=1e-5)
        np.testing.assert_allclose(got_alignment.numpy(), np_(alignment), atol=1e-5)
        token = np_(logits).argmax(-1).astype("int32")
    tokens, scores = model.greedy(np.array([0, 0], "int32"))
    got_tokens, got_scores = loaded.greedy(tf.constant([0, 0]))
    np.testing.assert_array_equal(got_tokens.numpy(), np_(tokens))
    np.testing.assert_allclose(got_scores.numpy(), np_(scores), atol=1e-5)


@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_loop_converts_to_tflite_builtin_ops(name):
    model = Model(MODELS[name]())
    outputs, (tokens, scores) = convert_and_run(model.greedy, np.array([0, 0], "int32"))
    by_dtype = {np.asarray(x).dtype.kind: x for x in outputs}
    np.testing.assert_array_equal(by_dtype["i"], tokens)
    np.testing.assert_allclose(by_dtype["f"], scores, atol=1e-5)
    # A real search: the rows differ and do not all end at once.
    assert len({tuple(row) for row in tokens}) == 2
