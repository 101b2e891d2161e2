"""Torch inference's large 2-D products through oneDNN, where it multiplies faster."""

import functools

import keras
import numpy as np
import pytest

from keras_rnnattn._backend import linear
from keras_rnnattn._backend.kernels import onednn_linear
from keras_rnnattn.models import Translator
from keras_rnnattn.ops import dense_2d
from keras_rnnattn.text import WordTokenizer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch's CPU inference"
)


def _needs_onednn():
    if onednn_linear._OP is None:
        pytest.skip("PyTorch without oneDNN")


@pytest.fixture
def choices(monkeypatch):
    """The op for every product, its choices of library an empty dict to fill."""
    _needs_onednn()
    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 0)
    made = {}
    monkeypatch.setattr(onednn_linear, "_FASTER", made)
    return made


def _dense(units, d, seed):
    layer = keras.layers.Dense(units)
    layer.build((None, d))
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    return layer


def _tensor(shape, seed):
    import torch

    rng = np.random.default_rng(seed)
    return torch.as_tensor(rng.normal(size=shape), dtype=torch.float32)


@pytest.mark.parametrize("library", ["onednn", "aten"])
def test_compiled_products_match_numpy_for_weights_views_and_computed_kernels(
    monkeypatch, choices, library
):
    # Through the op whichever library it chose: a layer's weight, a slice of
    # one (the decoder's input-feeding kernel), a kernel computed inside the
    # compiled function (the fixnorm blocks), with a bias and without, and a
    # 3-D input, its leading axes as rows (a GRU's projection of all steps).
    import torch

    calls = []
    for name in ("_onednn", "_aten"):
        product = getattr(onednn_linear, name)
        monkeypatch.setattr(
            onednn_linear,
            name,
            functools.partial(lambda p, n, *a: calls.append(n) or p(*a), product, name),
        )
    threads = torch.get_num_threads()
    for shape in ((5, 24, 30), (5, 12, 30), (5, 24, 24), (10, 24, 30)):
        for bias in (True, False):
            choices[(*shape, bias, threads)] = library == "onednn"
    layer = _dense(30, 24, 0)
    x = _tensor((5, 24), 1)
    torch._dynamo.reset()

    def products(layer, x):
        kernel = layer.kernel
        scaled = kernel * 2.0 - 1.0  # (24, 30), computed here
        return (
            dense_2d(layer, x),
            linear(x, kernel, layer.bias),
            linear(x[:, :12], kernel[12:]),  # a view of the weight
            linear(x, scaled),
            linear(x, keras.ops.transpose(kernel[:, :24])),  # strided
            linear(keras.ops.reshape(x, (1, 5, 24)), kernel),  # (1, 5, 30)
            linear(keras.ops.stack([x, -x]), kernel, layer.bias),  # rows of both
        )

    with torch.no_grad():
        got = torch.compile(products, fullgraph=True, backend="eager")(layer, x)
    k, b, xs = layer.kernel.numpy(), layer.bias.numpy(), x.numpy()
    want = (
        xs @ k + b,
        xs @ k + b,
        xs[:, :12] @ k[12:],
        xs @ (k * 2.0 - 1.0),
        xs @ k[:, :24].T,
        (xs @ k)[None],
        np.stack([xs, -xs]) @ k + b,
    )
    assert len(calls) == 7 and set(calls) == {f"_{library}"}
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-4)


def test_an_additive_attentions_query_and_bias_go_to_the_op(monkeypatch, choices):
    # W_q q + b of a decoding step: one product with its bias through the op
    # (`dense_plus`), the scores those of the layer's own Dense and bias.
    import torch

    from keras_rnnattn.layers import BahdanauAttention

    layer = BahdanauAttention(16)
    query, key = _tensor((6, 1, 12), 0), _tensor((6, 5, 10), 1)
    layer(query, key)
    rng = np.random.default_rng(2)
    for w in layer.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    processed = layer.precompute_keys(key)
    always = _AlwaysOneDNN()
    monkeypatch.setattr(onednn_linear, "_FASTER", always)
    with torch.no_grad():
        got = layer.compute_scores(query, processed).numpy()
    assert always.asked == 1  # the query's product, with the bias
    q = query.numpy() @ layer.query_dense.kernel.numpy() + layer.b.numpy()
    k = processed.detach().numpy()
    want = np.tanh(q[:, :, None] + k[:, None]) @ layer.v.numpy()  # (6, 1, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_op_measures_both_products_once_per_shape_and_keeps_the_faster(
    monkeypatch,
):
    import torch

    _needs_onednn()
    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(onednn_linear, "_FASTER", {})
    timings = []
    measure = onednn_linear._onednn_is_faster

    def counted(*args):
        timings.append(args[0].shape[0])
        return measure(*args)

    monkeypatch.setattr(onednn_linear, "_onednn_is_faster", counted)
    layer = _dense(64, 32, 4)
    torch._dynamo.reset()
    compiled = torch.compile(dense_2d, fullgraph=True, backend="eager")
    with torch.no_grad():
        for rows in (6, 6, 9, 6):
            x = _tensor((rows, 32), rows)
            want = x.numpy() @ layer.kernel.numpy() + layer.bias.numpy()
            np.testing.assert_allclose(
                compiled(layer, x).numpy(), want, rtol=1e-5, atol=1e-4
            )
    assert timings == [6, 9]  # once for each count of rows
    threads = torch.get_num_threads()
    assert set(onednn_linear._FASTER) == {
        (6, 32, 64, True, threads),
        (9, 32, 64, True, threads),
    }


def test_a_small_product_keeps_aten_in_the_compiled_graph():
    # Below `MIN_MULTIPLY_ADDS` the op is never called: nothing measured.
    import torch

    layer = _dense(300, 24, 6)
    assert 5 * 24 * 300 < onednn_linear.MIN_MULTIPLY_ADDS
    torch._dynamo.reset()
    before = dict(onednn_linear._FASTER)
    compiled = torch.compile(dense_2d, fullgraph=True, backend="eager")
    with torch.no_grad():
        got = compiled(layer, _tensor((5, 24), 2)).numpy()
    want = _tensor((5, 24), 2).numpy() @ layer.kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert onednn_linear._FASTER == before


def test_training_keeps_the_differentiable_product(monkeypatch):
    # The op has no gradient: with gradients on, `linear` and `dense_2d` keep
    # ATen's product, and the kernel gets its gradient.
    import torch

    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 0)
    layer = _dense(7, 4, 3)
    x = torch.ones(2, 4)
    torch._dynamo.reset()
    out = torch.compile(dense_2d, fullgraph=True, backend="eager")(layer, x)
    kernel = layer.kernel.value
    (out.sum() + linear(x, kernel).sum()).backward()
    np.testing.assert_allclose(kernel.grad.numpy(), np.full((4, 7), 4.0))


def test_torch_export_keeps_atens_product(monkeypatch):
    # `torch.export` (and ONNX after it) knows no custom op: an exported
    # product stays ATen's, gradients off or not.
    import torch

    _needs_onednn()
    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 0)

    class Product(torch.nn.Module):
        def forward(self, x, kernel):
            return linear(x, kernel)

    x, kernel = _tensor((3, 4), 0), _tensor((4, 5), 1)
    with torch.no_grad():
        assert onednn_linear.uses_onednn(x, kernel)  # eagerly, the op
        program = torch.export.export(Product(), (x, kernel))
    targets = [str(node.target) for node in program.graph.nodes]
    assert not [t for t in targets if "keras_rnnattn" in t]
    assert [t for t in targets if "matmul" in t or "mm" in t]
    np.testing.assert_allclose(
        program.module()(x, kernel).numpy(), x.numpy() @ kernel.numpy(), atol=1e-5
    )


def test_decoding_on_onednn_gives_the_tokens_of_atens_products(monkeypatch):
    # Eager decoding (no gradients) of a Translator with input feeding, the
    # lexical model and the fixnorm layer, greedy and beam search, every product
    # through oneDNN: the tokens and scores of the search with ATen's products.
    _needs_onednn()
    tokenizer = WordTokenizer().fit(["a b c d e f g h i j"])
    keras.utils.set_random_seed(3)
    model = Translator(
        tokenizer, tokenizer, embedding_dim=8, units=16, fixnorm=3.5, lexical_model=True
    )
    source = model.encode_source(["a b c", "d e f g h", "h g", "i j a"])

    def search(minimum, faster):
        monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", minimum)
        monkeypatch.setattr(onednn_linear, "_FASTER", faster)
        greedy = model.generate_ids(source, max_length=9)
        beam = model.generate_ids(source, max_length=9, beam_size=3)
        return greedy, beam

    aten = search(1 << 62, {})
    always = _AlwaysOneDNN()
    onednn = search(0, always)
    assert always.asked > 0
    for a, o in zip(aten, onednn):
        np.testing.assert_array_equal(a[0], o[0])  # tokens
        np.testing.assert_allclose(a[1], o[1], rtol=1e-4, atol=1e-4)  # scores


def test_jit_compile_runs_the_op_inside_inductors_loop(monkeypatch):
    # `jit_compile=True` on the CPU: inductor's `while_loop` over the step
    # calls the op at every step; greedy tokens and scores as eager ATen's.
    import torch

    from keras_rnnattn._backend.decoding import whole_loop

    _needs_onednn()
    tokenizer = WordTokenizer().fit(["a b c d e f g h"])
    keras.utils.set_random_seed(4)
    model = Translator(tokenizer, tokenizer, embedding_dim=8, units=8, fixnorm=3.5)
    source = model.encode_source(["a b c", "d e f g h", "h g"])
    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 1 << 62)
    want = model.generate_ids(source, max_length=8)
    monkeypatch.setattr(onednn_linear, "MIN_MULTIPLY_ADDS", 0)
    always = _AlwaysOneDNN()
    monkeypatch.setattr(onednn_linear, "_FASTER", always)
    # This test's loops apart from those of the tests after it.
    monkeypatch.setattr(whole_loop, "_CALLERS", {})
    monkeypatch.setattr(whole_loop, "_REFUSED", set())
    torch._dynamo.reset()
    model.compile(jit_compile=True)
    tokens, scores = model.generate_ids(source, max_length=8)
    asked = always.asked
    model.generate_ids(source, max_length=8)
    assert asked > 0 and always.asked > asked  # the compiled loop calls the op
    assert whole_loop._CALLERS and not whole_loop._REFUSED
    np.testing.assert_array_equal(tokens, want[0])
    np.testing.assert_allclose(scores, want[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("by_steps", [True, False])
def test_an_inference_gru_by_steps_gives_the_stock_layers_outputs(
    monkeypatch, choices, by_steps
):
    # Without gradients, where oneDNN measured faster for the recurrent
    # product, a GRU runs its projection and `gate_step`s through the op
    # (else `torch.gru`): either way the stock Keras layer's outputs, from a
    # given initial state too.
    import torch

    from keras_rnnattn._backend import run_rnn
    from keras_rnnattn._backend.kernels import rnn_kernels

    rows, units = 4, 8
    threads = torch.get_num_threads()
    choices[(rows, units, 3 * units, True, threads)] = by_steps
    gru = keras.layers.GRU(units, return_sequences=True)
    gru.build((None, None, 6))
    rng = np.random.default_rng(5)
    for w in gru.weights:
        w.assign(rng.normal(scale=0.7, size=w.shape).astype("float32"))
    x, h0 = _tensor((rows, 7, 6), 6), _tensor((rows, units), 7)
    fused, original = [], rnn_kernels.call_fused_rnn
    monkeypatch.setattr(
        rnn_kernels, "call_fused_rnn", lambda *a: fused.append(1) or original(*a)
    )
    with torch.no_grad():
        got = run_rnn(gru, x, [h0]).numpy()
        got_zero = run_rnn(gru, x).numpy()
        want = gru(x, initial_state=[h0]).numpy()
        want_zero = gru(x).numpy()
    assert len(fused) == (0 if by_steps else 2)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(got_zero, want_zero, atol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
def test_a_compiled_inference_gru_runs_by_steps_through_the_op(
    monkeypatch, choices, grad
):
    # Traced without gradients, a GRU whose recurrent product the op takes
    # runs by steps, whatever the op would choose (it chooses when called):
    # the graph calls the op, not `torch.gru`; the stock layer's outputs.
    # A traced train step keeps `torch.gru`.
    import torch

    from keras_rnnattn._backend import run_rnn
    from keras_rnnattn._backend.kernels import rnn_kernels

    rows, units = 4, 8
    gru = keras.layers.GRU(units, return_sequences=True)
    gru.build((None, None, 6))
    rng = np.random.default_rng(8)
    for w in gru.weights:
        w.assign(rng.normal(scale=0.7, size=w.shape).astype("float32"))
    x = _tensor((rows, 7, 6), 9)
    fused, original = [], rnn_kernels.call_fused_rnn
    monkeypatch.setattr(
        rnn_kernels, "call_fused_rnn", lambda *a: fused.append(1) or original(*a)
    )
    always = _AlwaysOneDNN()
    monkeypatch.setattr(onednn_linear, "_FASTER", always)
    torch._dynamo.reset()
    compiled = torch.compile(run_rnn, fullgraph=True, backend="eager")
    with torch.set_grad_enabled(grad):
        got = compiled(gru, x).detach().numpy()
    with torch.no_grad():
        want = gru(x).numpy()
    assert len(fused) == (1 if grad else 0)
    assert (always.asked > 0) == (not grad)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_choice_never_made_is_timed_once_on_placeholders(monkeypatch):
    import torch

    _needs_onednn()
    monkeypatch.setattr(onednn_linear, "_FASTER", {})
    timed = []
    measure = onednn_linear._onednn_is_faster
    monkeypatch.setattr(
        onednn_linear, "_onednn_is_faster", lambda *a: timed.append(a) or measure(*a)
    )
    kernel = _tensor((16, 48), 8)
    chosen = onednn_linear.measured_faster(3, kernel)
    assert onednn_linear.measured_faster(3, kernel) is chosen
    key = (3, 16, 48, True, torch.get_num_threads())
    assert onednn_linear._FASTER == {key: chosen} and len(timed) == 1
    x, k, b = timed[0]
    assert (x.shape, k.shape, b.shape) == ((3, 16), (16, 48), (48,))


class _AlwaysOneDNN(dict):
    """`_FASTER` answering "oneDNN" for every shape, counting the questions."""

    asked = 0

    def get(self, key, default=None):
        self.asked += 1
        return True


def test_docstring_example_runs():
    import doctest

    _needs_onednn()
    result = doctest.testmod(onednn_linear)
    assert result.attempted > 0 and result.failed == 0
