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


def _rows(n, d, seed=2):
    import torch

    return torch.as_tensor(
        np.random.default_rng(seed).normal(size=(n, d)), dtype=torch.float32
    )


def test_compiled_dense_packs_its_kernel_once_and_follows_new_values(monkeypatch):
    import torch

    if packed_linear._OP is None:
        pytest.skip("PyTorch without oneDNN")
    # A small product, through the op, on the packed kernel.
    monkeypatch.setattr(packed_linear, "MIN_MULTIPLY_ADDS", 0)
    key = (5, 24, 300, torch.get_num_threads())
    monkeypatch.setitem(packed_linear._FASTER, key, True)
    first, second = _dense(300, 24, 0), _dense(300, 24, 1)
    x = _rows(5, 24)
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


def test_the_op_measures_both_products_once_per_shape_and_keeps_the_faster(
    monkeypatch,
):
    import torch

    if packed_linear._OP is None:
        pytest.skip("PyTorch without oneDNN")
    monkeypatch.setattr(packed_linear, "MIN_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(packed_linear, "_FASTER", {})
    timings = []
    measure = packed_linear._packed_is_faster

    def counted(*args):
        timings.append(args[0].shape[0])
        return measure(*args)

    monkeypatch.setattr(packed_linear, "_packed_is_faster", counted)
    layer = _dense(64, 32, 4)
    torch._dynamo.reset()
    compiled = torch.compile(dense_2d, fullgraph=True, backend="eager")

    def want(x):
        return x.numpy() @ layer.kernel.numpy() + layer.bias.numpy()

    with torch.no_grad():
        for rows in (6, 6, 9, 6):
            x = _rows(rows, 32, seed=rows)
            np.testing.assert_allclose(
                compiled(layer, x).numpy(), want(x), rtol=1e-4, atol=1e-4
            )
    assert timings == [6, 9]  # once for each count of rows
    threads = torch.get_num_threads()
    assert set(packed_linear._FASTER) == {(6, 32, 64, threads), (9, 32, 64, threads)}
    # A packed copy is kept only where the packed product won for a shape.
    won = [packed_linear._FASTER[(rows, 32, 64, threads)] for rows in (6, 9)]
    assert (id(layer.kernel.value) in packed_linear._PACKED) == any(won)

    # Where `addmm` is timed faster, the packed copy the timing made is dropped.
    third = _dense(64, 32, 7)
    monkeypatch.setattr(
        packed_linear, "_packed_is_faster", lambda *args: measure(*args) and False
    )
    with torch.no_grad():
        x = _rows(8, 32)
        got = compiled(third, x).numpy()
    np.testing.assert_allclose(
        got, x.numpy() @ third.kernel.numpy() + third.bias.numpy(), rtol=1e-4, atol=1e-4
    )
    assert packed_linear._FASTER[(8, 32, 64, threads)] is False
    assert id(third.kernel.value) not in packed_linear._PACKED

    # Where `addmm` measured faster, the kernel is never packed.
    other = _dense(64, 32, 5)
    packed_linear._FASTER[(7, 32, 64, threads)] = False
    with torch.no_grad():
        x = _rows(7, 32)
        got = compiled(other, x).numpy()
    want = x.numpy() @ other.kernel.numpy() + other.bias.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert id(other.kernel.value) not in packed_linear._PACKED


def test_a_small_product_keeps_addmm_in_the_compiled_graph():
    # Below `MIN_MULTIPLY_ADDS` the op is never called: nothing measured or packed.
    import torch

    layer = _dense(300, 24, 6)
    assert 5 * 24 * 300 < packed_linear.MIN_MULTIPLY_ADDS
    torch._dynamo.reset()
    compiled = torch.compile(dense_2d, fullgraph=True, backend="eager")
    with torch.no_grad():
        got = compiled(layer, _rows(5, 24)).numpy()
    want = _rows(5, 24).numpy() @ layer.kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert id(layer.kernel.value) not in packed_linear._PACKED
    assert (5, 24, 300, torch.get_num_threads()) not in packed_linear._FASTER


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
