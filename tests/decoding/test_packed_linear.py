"""The output layer of a compiled torch decoding step on oneDNN's packed weights."""

import keras
import numpy as np
import pytest

from keras_rnnattn._backend import packed_linear
from keras_rnnattn.ops import dense_2d

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's compiled decoding step"
)


def _dense(units, d, seed):
    layer = keras.layers.Dense(units)
    layer.build((None, d))
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    return layer


def test_compiled_dense_packs_its_kernel_once_and_follows_new_values():
    import torch

    if packed_linear._OP is None:
        pytest.skip("PyTorch without oneDNN")
    first, second = _dense(300, 24, 0), _dense(300, 24, 1)
    x = torch.as_tensor(
        np.random.default_rng(2).normal(size=(5, 24)), dtype=torch.float32
    )
    torch._dynamo.reset()
    compiled = torch.compile(dense_2d, fullgraph=True, backend="eager")

    def check(layer):
        with torch.no_grad():
            got = compiled(layer, x).numpy()
        want = x.numpy() @ layer.kernel.numpy() + layer.bias.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

    check(first)
    entry = packed_linear._PACKED[id(first.kernel.value)]
    assert entry[0]() is first.kernel.value
    check(first)  # the same tensor, the same values: the packed copy is reused
    assert packed_linear._PACKED[id(first.kernel.value)][3] is entry[3]
    check(second)  # another layer: its own packed kernel
    assert id(second.kernel.value) in packed_linear._PACKED
    first.kernel.assign(first.kernel.numpy() * -2.0)  # new values: packed again
    check(first)
    assert packed_linear._PACKED[id(first.kernel.value)][3] is not entry[3]


def test_training_and_eager_calls_keep_the_plain_product():
    # The op has no gradient: with gradients on, or outside compiled code,
    # `dense_2d` keeps `addmm`, and the kernel gets its gradient.
    import torch

    layer = _dense(7, 4, 3)
    x = torch.ones(2, 4)
    torch._dynamo.reset()
    out = torch.compile(dense_2d, fullgraph=True, backend="eager")(layer, x)
    out.sum().backward()
    np.testing.assert_allclose(layer.kernel.value.grad.numpy(), np.full((4, 7), 2.0))
    with torch.no_grad():
        dense_2d(layer, x)
    assert id(layer.kernel.value) not in packed_linear._PACKED


def test_docstring_example_runs():
    import doctest

    if packed_linear._OP is None:
        pytest.skip("PyTorch without oneDNN")

    result = doctest.testmod(packed_linear)
    assert result.attempted > 0 and result.failed == 0
