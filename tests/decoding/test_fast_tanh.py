"""tanh by Eigen's rational function, which compiled torch inference computes."""

import keras
import numpy as np
import pytest

from keras_rnnattn._backend.kernels import fast_tanh
from keras_rnnattn._backend.kernels.fast_tanh import rational_tanh


def _grid():
    small = np.geomspace(1e-9, 1e-2, 2001)
    return np.concatenate(
        [np.linspace(-12.0, 12.0, 200001), small, -small, [0.0, 7.9, 8.0, 50.0]]
    ).astype("float32")


def test_the_rational_function_is_tanh_within_its_float32_error():
    x = _grid()
    got = keras.ops.convert_to_numpy(rational_tanh(x))
    want = np.tanh(x.astype("float64"))
    np.testing.assert_allclose(got, want, rtol=0, atol=3.5e-7)
    # Below the cut it is x itself: relative error as small as the rest's.
    tiny = np.abs(x) < 1e-3
    np.testing.assert_allclose(got[tiny], want[tiny], rtol=3e-7, atol=0)
    assert np.all(np.abs(got) <= 1.0)
    assert rational_tanh(np.float32(np.inf)) == 1.0


def test_the_rational_function_matches_tensorflows_kernel():
    # TensorFlow's CPU tanh is Eigen's vectorized form of this function: the
    # two differ by rounding (fused multiply-adds) only.
    tf = pytest.importorskip("tensorflow")
    x = _grid()
    got = keras.ops.convert_to_numpy(rational_tanh(x))
    np.testing.assert_allclose(got, tf.math.tanh(x).numpy(), rtol=0, atol=4.5e-7)


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch's compiler")
def test_only_compiled_torch_inference_computes_the_rational_function():
    import torch

    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def has_tanh(gm):
        return any("tanh" in str(node.target) for node in gm.graph.nodes)

    x = torch.as_tensor(_grid())
    fn = torch.compile(fast_tanh.tanh, backend=keep, fullgraph=True, dynamic=False)
    torch._dynamo.reset()
    with torch.no_grad():
        inference = fn(x)
    assert len(graphs) == 1 and not has_tanh(graphs[0])
    np.testing.assert_allclose(
        inference.numpy(), np.tanh(x.double().numpy()), rtol=0, atol=3.5e-7
    )
    # A train step keeps torch's tanh, and its gradient.
    torch._dynamo.reset()
    fn(x.clone().requires_grad_(True))
    assert len(graphs) == 2 and has_tanh(graphs[1])
    # Eager torch runs one kernel.
    with torch.no_grad():
        np.testing.assert_array_equal(fast_tanh.tanh(x).numpy(), torch.tanh(x).numpy())


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch's exporter")
def test_torch_export_keeps_tanh():
    import torch

    class Tanh(torch.nn.Module):
        def forward(self, x):
            return fast_tanh.tanh(x)

    with torch.no_grad():
        program = torch.export.export(Tanh(), (torch.ones(3),))
    targets = [str(node.target) for node in program.graph.nodes]
    assert any("tanh" in t for t in targets)
