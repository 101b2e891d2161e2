"""Torch: `run_rnn`'s fused GRU/LSTM call inside `torch.compile` (`torch_fused_rnn`)."""

import keras
import numpy as np
import pytest

from keras_rnnattn._backend import run_rnn, torch_options
from keras_rnnattn._backend.experimental import torch_rnn_op
from keras_rnnattn._backend.kernels import torch_fused_rnn

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch.compile of the fused kernel"
)

B, T, D_IN, UNITS = 3, 7, 5, 6


def layer_and_inputs(layer_cls):
    keras.utils.set_random_seed(2)
    rnn = layer_cls(UNITS, return_sequences=True)
    rnn.build((None, None, D_IN))
    x = np.random.default_rng(2).normal(size=(B, T, D_IN)).astype("float32")
    return rnn, x


def loss_and_gradients(rnn, x, compile_fn=None):
    """The loss of `run_rnn` on `x` and its gradients (the weights, `x`), and
    the names of the operators that ran (`torch.profiler`)."""
    import torch
    from torch.profiler import profile

    inputs = torch.tensor(x, requires_grad=True)
    weights = [w.value for w in rnn.trainable_weights]

    def loss_fn(inputs):
        out = run_rnn(rnn, inputs, training=True)  # (B, T, units)
        return (torch.sin(out) * torch.arange(T)[None, :, None]).sum()

    fn = loss_fn
    if compile_fn is not None:
        fn = compile_fn(loss_fn)
        torch.autograd.grad(fn(inputs), weights)  # compiles, outside the profile
    with profile() as prof:
        loss = fn(inputs)
        grads = torch.autograd.grad(loss, weights + [inputs])
    names = {event.key for event in prof.key_averages()}
    return float(loss.detach()), [g.detach().numpy() for g in grads], names


@pytest.fixture
def as_operator(request):
    """Large recurrent layers as operators of the compiled graph, or at breaks."""
    with torch_options(rnn_operator=request.param):
        yield request.param


@pytest.mark.parametrize("as_operator", [True, False], indirect=True)
@pytest.mark.parametrize("layer_cls", [keras.layers.GRU, keras.layers.LSTM])
def test_a_large_layer_trained_under_torch_compile_calls_the_fused_kernel(
    layer_cls, as_operator, monkeypatch
):
    # AOTAutograd unrolls `torch.gru`/`torch.lstm` into its steps; a layer from
    # OUTSIDE_GRAPH_FROM multiply-adds per step runs the fused kernel (forward
    # and backward) as one operator of the graph (`torch_rnn_op`: oneDNN's
    # LSTM layer, or `torch.gru` recomputed) or, without `rnn_operator`, at a
    # graph break, to the eager loss and gradients. A smaller one stays in the
    # graph, unrolled, to the same numbers.
    import torch

    kernel = {keras.layers.GRU: "aten::gru", keras.layers.LSTM: "aten::lstm"}
    kernel = kernel[layer_cls]
    torch_rnn_op._operators()  # defined before tracing
    rnn, x = layer_and_inputs(layer_cls)
    want_loss, want_grads, eager_ops = loss_and_gradients(rnn, x)
    assert kernel in eager_ops

    def compiled(fn):
        return torch.compile(fn, backend="aot_eager")

    monkeypatch.setattr(torch_fused_rnn, "OUTSIDE_GRAPH_FROM", 1)
    torch._dynamo.reset()
    loss, grads, ran = loss_and_gradients(rnn, x, compiled)
    if as_operator and kernel == "aten::lstm":
        assert {"keras_rnnattn::mkldnn_lstm", "aten::mkldnn_rnn_layer_backward"} <= ran
    else:
        assert kernel in ran
    assert loss == pytest.approx(want_loss, rel=1e-5)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    monkeypatch.setattr(torch_fused_rnn, "OUTSIDE_GRAPH_FROM", 10**9)
    torch._dynamo.reset()
    loss, grads, ran = loss_and_gradients(rnn, x, compiled)
    assert kernel not in ran  # unrolled in the graph
    assert loss == pytest.approx(want_loss, rel=1e-5)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_without_gradients_the_layer_compiles_in_one_graph(monkeypatch):
    # A decoding search's compiled encoder runs without gradients: the layer
    # stays in its graph whatever its size (`fullgraph=True` fails on a break).
    import torch

    monkeypatch.setattr(torch_fused_rnn, "OUTSIDE_GRAPH_FROM", 1)
    rnn, x = layer_and_inputs(keras.layers.LSTM)
    inputs = torch.tensor(x)
    torch._dynamo.reset()
    encode = torch.compile(
        lambda inputs: run_rnn(rnn, inputs), fullgraph=True, backend="eager"
    )
    with torch.no_grad():
        got = encode(inputs)
        want = run_rnn(rnn, inputs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("as_operator", [True, False], indirect=True)
def test_a_translator_breaks_its_compiled_graph_only_at_the_fused_call(
    as_operator, monkeypatch
):
    # Dynamo's graph breaks in a compiled forward and backward pass of the fast
    # path (LSTM encoder and decoder, bridges), every layer large enough for
    # its fused kernel. As operators of the graph: only Keras's own, where
    # `Layer.__call__` flattens the model's tuple of inputs (`x is not
    # structure` on tuples, which Dynamo does not trace). At graph breaks: the
    # one each fused call asks for, and not the one that made Dynamo run
    # whole frames of the encoder eagerly (`torch.compiler.disable` called
    # while tracing).
    import torch
    from torch._dynamo.utils import counters

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import WordTokenizer

    monkeypatch.setattr(torch_fused_rnn, "OUTSIDE_GRAPH_FROM", 0)
    torch_rnn_op._operators()  # defined before tracing
    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(0)
    model = Translator(
        tokenizer,
        tokenizer,
        embedding_dim=8,
        units=8,
        cell="lstm",
        attention="luong_dot",
        input_feeding=False,
        bidirectional=False,
    )
    rng = np.random.default_rng(0)
    source = torch.tensor(rng.integers(4, 12, (2, 5)))
    target = torch.tensor(rng.integers(4, 12, (2, 4)))
    model((source, target))  # builds, eagerly

    def loss_fn(source, target):
        return model((source, target), training=True).square().sum()

    want = loss_fn(source, target)
    torch._dynamo.reset()
    counters.clear()
    loss = torch.compile(loss_fn, backend="eager")(source, target)
    torch.autograd.grad(loss, [w.value for w in model.trainable_weights])
    reasons = list(counters["graph_break"])
    np.testing.assert_allclose(float(loss.detach()), float(want.detach()), rtol=1e-5)
    if as_operator:
        assert reasons and all("`is_not`" in reason for reason in reasons), reasons
        return
    assert any("_first_output" in reason for reason in reasons), reasons
    assert not any("`disable`" in reason for reason in reasons), reasons
