"""PlainDecoder: no attention, with AttentionDecoder's signatures."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.layers.plain_decoder import PlainDecoder

B, T, S, D_IN, FORWARD, BACKWARD, UNITS = 3, 4, 5, 6, 4, 3, 8
rng = np.random.default_rng(0)
INPUTS = rng.normal(size=(B, T, D_IN)).astype("float32")
MEMORY = rng.normal(size=(B, S, FORWARD + BACKWARD)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)


@pytest.mark.parametrize("backward_size", [0, BACKWARD])
def test_the_summary_is_the_encoders_final_state(backward_size):
    decoder = PlainDecoder(UNITS, backward_size=backward_size)
    summary = ops.convert_to_numpy(
        decoder.prepare_memory(MEMORY, MASK)["summary"]
    )  # (B, d)
    forward = MEMORY.shape[-1] - backward_size
    last = MASK.sum(axis=1) - 1
    expected = MEMORY[np.arange(B), last, :forward]  # the forward RNN's last step
    if backward_size:  # the backward RNN's output at the first token
        expected = np.concatenate([expected, MEMORY[:, 0, forward:]], axis=-1)
    np.testing.assert_array_equal(summary, expected)
    # Without a mask every row is whole.
    whole = ops.convert_to_numpy(decoder.prepare_memory(MEMORY)["summary"])
    np.testing.assert_array_equal(whole[:, :forward], MEMORY[:, -1, :forward])


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_step_and_call_agree_with_a_none_alignment(cell):
    decoder = PlainDecoder(UNITS, cell=cell, output_size=5, backward_size=BACKWARD)
    outputs, alignments = decoder(INPUTS, MEMORY, memory_mask=MASK)
    assert alignments is None
    assert tuple(outputs.shape) == (B, T, 5)
    assert decoder.compute_output_shape(INPUTS.shape, MEMORY.shape) == (
        (B, T, 5),
        None,
    )
    memory = decoder.prepare_memory(MEMORY, MASK)
    states = decoder.get_initial_state(B, memory=memory)
    stepped = []
    for t in range(T):
        output, states, alignment = decoder.step(INPUTS[:, t], states, memory)
        assert alignment is None
        stepped.append(ops.convert_to_numpy(output))
    np.testing.assert_allclose(
        np.stack(stepped, axis=1), ops.convert_to_numpy(outputs), atol=1e-5
    )
