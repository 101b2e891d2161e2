"""The torch decoding loops read nothing back from the device inside a step."""

import keras
import numpy as np
import pytest

from keras_rnnattn._backend.loops import step_wrapper
from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's decoding loop"
)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_a_translators_decoding_step_compiles_as_one_graph(beam_size):
    # `fullgraph=True` fails on any graph break, which a read of a tensor's
    # value on the host (a Python `if` on it, `.item()`, a copy to NumPy)
    # causes: the step of greedy and beam search has none. Dynamo's "eager"
    # backend traces the graph without generating code (seconds on a CPU).
    import torch

    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=8, attention="bahdanau"
    )
    source = model.encode_source(["a b c", "d e f g h"])
    want, want_scores = model.generate_ids(source, beam_size=beam_size)
    torch._dynamo.reset()
    compiled = []

    def compile_step(body):
        compiled.append(body)
        return torch.compile(body, fullgraph=True, dynamic=False, backend="eager")

    with step_wrapper(compile_step):
        got, scores = model.generate_ids(source, beam_size=beam_size)
    assert len(compiled) == 1
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(want)
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(scores),
        keras.ops.convert_to_numpy(want_scores),
        rtol=1e-6,
    )
