"""`compile(jit_compile=True)` on torch: Keras compiles the train step with
`torch.compile`; the models' train step must compile once and learn as eagerly."""

import keras
import numpy as np
import pytest

from keras_rnnattn.models import Translator
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="Keras's torch.compile train step"
)


def losses_of(jit_compile, steps=4):
    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer,
        tokenizer,
        embedding_dim=8,
        units=8,
        attention="bahdanau",
        input_feeding=True,
    )
    model.compile(jit_compile=jit_compile)  # the default `InPlaceAdam`
    rng = np.random.default_rng(0)
    source = rng.integers(4, 12, (4, 6)).astype("int32")
    target = rng.integers(4, 12, (4, 6)).astype("int32")
    losses, graphs = [], []
    for _ in range(steps):
        loss = model.train_on_batch((source, target[:, :-1]), target[:, 1:])
        losses.append(float(np.ravel(loss)[0]))
        graphs.append(graph_count())
    return losses, graphs


def graph_count():
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


@pytest.mark.slow  # inductor compiles the whole train step: about 80 s cold
def test_jit_compiled_train_step_learns_as_eager_and_compiles_once():
    # The in-place Adam keeps its step size a tensor under torch.compile: read
    # into a Python number, each new step count compiled the update again
    # (`test_in_place_adam_compiles_once_under_torch_compile` checks that alone).
    import torch

    want, _ = losses_of(False)
    torch._dynamo.reset()
    got, graphs = losses_of(True)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert want[-1] < want[0]
    assert graphs[0] > 0  # compiled
    assert graphs[-1] == graphs[1]  # nothing recompiled after the first steps
