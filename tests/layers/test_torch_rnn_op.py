"""Torch: the fused GRU/LSTM as one operator of a compiled graph (`torch_rnn_op`)."""

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's custom operators"
)

B, T, D_IN, UNITS = 3, 5, 4, 6


def make_arguments(kind, seed=0):
    """Batch-major inputs, `[h0]` or `[h0, c0]` and PyTorch's four weights."""
    import torch

    gates = (4 if kind == "lstm" else 3) * UNITS
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, D_IN, generator=g)
    states = [
        torch.randn(1, B, UNITS, generator=g) for _ in range(2 if kind == "lstm" else 1)
    ]
    shapes = [(gates, D_IN), (gates, UNITS), (gates,), (gates,)]
    params = [torch.randn(shape, generator=g) / 2 for shape in shapes]
    return x, states, params


def torch_rnn(kind, x, states, params):
    """The reference: `torch.lstm`/`torch.gru`'s output sequence, eagerly."""
    import torch

    if kind == "lstm":
        return torch.lstm(x, tuple(states), params, True, 1, 0.0, True, False, True)[0]
    return torch.gru(x, states[0], params, True, 1, 0.0, True, False, True)[0]


def output_and_gradients(fn, kind, seed=0):
    import torch

    x, states, params = make_arguments(kind, seed)
    leaves = [t.requires_grad_() for t in [x, *states, *params]]
    n = len(states)
    y = fn(kind, leaves[0], leaves[1 : 1 + n], leaves[1 + n :])
    weights = torch.linspace(-1, 1, y.numel()).reshape(y.shape)
    grads = torch.autograd.grad((torch.sin(y) * weights).sum(), leaves)
    return y.detach().numpy(), [g.numpy() for g in grads]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_rnn_compiles_as_one_graph_to_the_kernels_gradients(kind):
    # An LSTM on the CPU runs oneDNN's layer forward and backward through the
    # operator, a GRU the recomputing one; compiled with inductor and no graph
    # break (`fullgraph=True`), both give `torch.lstm`/`torch.gru`'s output and
    # the gradients of every input, state and weight.
    import torch

    from keras_rnnattn._backend.experimental.torch_rnn_op import _operators, fused_rnn

    _operators()  # defined before tracing (defining them breaks the graph)
    want_y, want_grads = output_and_gradients(torch_rnn, kind)
    torch._dynamo.reset()
    compiled = torch.compile(fused_rnn, fullgraph=True)
    for fn in (fused_rnn, compiled):
        y, grads = output_and_gradients(fn, kind)
        np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
        assert len(grads) == len(want_grads)
        for got, want in zip(grads, want_grads):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_the_recomputing_operator_gives_an_lstms_gradients():
    # The operator an LSTM runs where oneDNN's layer does not (an accelerator,
    # bfloat16): the forward without recording, the backward recomputing it.
    import torch

    from keras_rnnattn._backend.experimental.torch_rnn_op import _operators

    recompute = _operators()["rnn_recompute"]

    def through_recompute(kind, x, states, params):
        return recompute(x, *states, *params)

    want_y, want_grads = output_and_gradients(torch_rnn, "lstm", seed=1)
    torch._dynamo.reset()
    compiled = torch.compile(through_recompute, fullgraph=True, backend="aot_eager")
    y, grads = output_and_gradients(compiled, "lstm", seed=1)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name, kind", [("mkldnn_lstm", "lstm"), ("rnn_recompute", "gru")]
)
def test_the_operators_pass_torchs_opcheck(name, kind):
    # Schema, autograd registration and fake kernel (shapes, strides, the
    # workspace's size) against the real kernels. oneDNN's workspace holds
    # bytes no kernel reads, different at each run: its operator skips the
    # check that compares every output of two runs.
    import torch

    from keras_rnnattn._backend.experimental.torch_rnn_op import _operators

    x, states, params = make_arguments(kind)
    if name == "mkldnn_lstm":
        x = x.transpose(0, 1).contiguous()  # (T, B, input_dim)
    args = [t.requires_grad_() for t in [x, *states, *params]]
    if kind == "gru":
        args.insert(2, None)  # no c0
    checks = ("test_schema", "test_autograd_registration", "test_faketensor")
    if name != "mkldnn_lstm":
        checks += ("test_aot_dispatch_dynamic",)
    result = torch.library.opcheck(_operators()[name], tuple(args), test_utils=checks)
    assert result == {check: "SUCCESS" for check in checks}


def test_the_workspace_size_is_the_kernels():
    # The fake kernel's workspace size, found once per shape, is the size the
    # real oneDNN kernel writes (a wrong one fails inductor's size assert).
    import torch

    from keras_rnnattn._backend.experimental.torch_rnn_op import (
        _operators,
        _workspace_size,
    )

    x, states, params = make_arguments("lstm")
    x = x.transpose(0, 1).contiguous()  # (T, B, input_dim)
    *_, workspace = _operators()["mkldnn_lstm"](x, *states, *params)
    assert workspace.dtype == torch.uint8
    assert workspace.numel() > 0
    assert _workspace_size(T, B, D_IN, UNITS) == workspace.numel()
