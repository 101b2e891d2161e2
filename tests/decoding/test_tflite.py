"""The decoders convert to TFLite builtin ops and give the same results there."""

import keras
import numpy as np
import pytest
from decoding_helpers import StepTableModel, convert_and_run

from keras_rnnattn.decoding import beam_search, greedy_search, sample

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="TFLite converts TensorFlow graphs; JAX and torch models export "
    "through the TensorFlow backend",
)

END = 0


@pytest.mark.parametrize("decoder", ["greedy", "sample", "beam"])
def test_converts_to_builtin_ops_and_matches(decoder):
    log_probs = StepTableModel.random(3, max_length=5, vocab_size=6).table
    alignments = np.random.default_rng(3).dirichlet(np.ones(4), size=(5, 6))
    model = StepTableModel(log_probs, alignments.astype("float32"))
    starts = np.array([1, 2, 3], np.int32)

    def fn(start_ids):
        state = model.initial_state(3)
        if decoder == "greedy":
            return greedy_search(model.next_fn, state, start_ids, END, 5)
        if decoder == "sample":
            return sample(
                model.next_fn, state, start_ids, END, 5, top_k=4, top_p=0.9, seed=1
            )
        return beam_search(
            model.next_fn,
            state,
            start_ids,
            END,
            5,
            beam_size=3,
            length_penalty=0.6,
            coverage_penalty=0.2,
            num_return_sequences=2,
        )

    outputs, expected = convert_and_run(fn, starts)
    # The output order of a TFLite model is not guaranteed: match by dtype.
    by_dtype = {np.asarray(x).dtype.kind: x for x in outputs}
    tokens, scores = expected
    np.testing.assert_array_equal(by_dtype["i"], tokens)
    np.testing.assert_allclose(by_dtype["f"], scores, rtol=1e-5, atol=1e-5)
