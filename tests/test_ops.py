import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.ops import dense_2d, device_scalar


def gradients(fn, variables):
    """Gradients of `sum(fn())` with respect to `variables` (torch, TensorFlow)."""
    backend = keras.backend.backend()
    if backend == "torch":
        for v in variables:
            v.value.grad = None
        ops.sum(fn()).backward()
        return [v.value.grad.numpy() for v in variables]
    import tensorflow as tf

    with tf.GradientTape() as tape:
        total = tf.reduce_sum(fn())
    return [g.numpy() for g in tape.gradient(total, [v.value for v in variables])]


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_dense_2d_is_the_layer(dtype):
    rng = np.random.default_rng(0)
    layer = keras.layers.Dense(7, dtype=dtype)
    layer.build((None, 5))
    layer.bias.assign(rng.normal(size=7).astype("float32"))
    x = ops.convert_to_tensor(rng.normal(size=(4, 5)).astype("float32"))
    got, want = dense_2d(layer, x), layer(x)
    assert got.dtype == want.dtype
    tol = 1e-6 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(
        ops.convert_to_numpy(ops.cast(got, "float32")),
        ops.convert_to_numpy(ops.cast(want, "float32")),
        rtol=tol,
        atol=tol,
    )
    if dtype == "float32" and keras.backend.backend() != "jax":
        # (On JAX, as on TensorFlow, dense_2d is the layer call itself.)
        ours = gradients(lambda: dense_2d(layer, x) ** 2, [layer.kernel, layer.bias])
        theirs = gradients(lambda: layer(x) ** 2, [layer.kernel, layer.bias])
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dense_2d_keeps_the_layer_when_it_has_an_activation():
    layer = keras.layers.Dense(3, activation="relu", bias_initializer="ones")
    x = ops.convert_to_tensor(-np.ones((2, 4), "float32"))
    layer.build((None, 4))
    layer.kernel.assign(np.ones((4, 3), "float32"))
    np.testing.assert_array_equal(ops.convert_to_numpy(dense_2d(layer, x)), 0.0)


@pytest.mark.parametrize(
    "value, dtype", [(0, "int32"), (-1e9, "float32"), (0.5, "bfloat16")]
)
def test_device_scalar_is_the_number(value, dtype):
    scalar = device_scalar(value, dtype)
    assert tuple(scalar.shape) == ()
    assert keras.backend.standardize_dtype(scalar.dtype) == dtype
    assert float(keras.ops.convert_to_numpy(keras.ops.cast(scalar, "float32"))) == value


@pytest.mark.parametrize(
    "name",
    [
        "keras_rnnattn.ops",
        "keras_rnnattn._backend.kernels.fused_dense",
        "keras_rnnattn._backend.decoding.scalars",
        "keras_rnnattn._backend.decoding.best_tokens",
        "keras_rnnattn._backend.kernels.additive_scores",
        "keras_rnnattn._backend.decoding.loops",
        "keras_rnnattn._backend.kernels.cross_entropy",
        "keras_rnnattn._backend.kernels.torch_cross_entropy",
        "keras_rnnattn._backend.kernels.tf_cross_entropy",
        "keras_rnnattn._backend.kernels.jax_lstm",
        "keras_rnnattn._backend.kernels.tf_lstm",
        "keras_rnnattn._backend.kernels.tf_gru",
        "keras_rnnattn._backend.kernels.log_mean_exp",
        "keras_rnnattn._backend.kernels.fast_tanh",
        "keras_rnnattn._backend.experimental.torch_rnn_op",
    ],
)
def test_ops_docstring_examples_run(name):
    # `ops.dense_2d` and `ops.device_scalar` are defined in `_backend`: their
    # examples run there.
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_best_log_probs_is_the_log_softmax_of_the_best_token():
    from keras_rnnattn._backend import best_log_probs

    logits = np.random.default_rng(0).normal(size=(8, 50)).astype("float32") * 4
    shifted = logits - logits.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    want_ids = logits.argmax(-1)
    want = log_softmax[np.arange(8), want_ids]
    runs = [best_log_probs]
    if keras.backend.backend() == "torch":
        import torch

        # The branch a compiled step takes (Dynamo without inductor: fast).
        runs.append(torch.compile(best_log_probs, backend="eager", fullgraph=True))
    for run in runs:
        ids, values = run(keras.ops.convert_to_tensor(logits))
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(ids), want_ids)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(values), want, rtol=1e-5)


def test_additive_scores_are_the_product_by_v_and_its_gradient():
    from keras_rnnattn._backend import additive_scores

    rng = np.random.default_rng(0)
    hidden = np.tanh(rng.normal(size=(3, 2, 5, 8))).astype("float32")
    v = rng.normal(size=8).astype("float32")
    runs = [additive_scores]
    if keras.backend.backend() == "torch":
        import torch

        # The multiply and sum a compiled step takes (Dynamo without inductor).
        runs.append(torch.compile(additive_scores, backend="eager", fullgraph=True))
    for run in runs:
        scores = run(ops.convert_to_tensor(hidden), ops.convert_to_tensor(v))
        np.testing.assert_allclose(
            ops.convert_to_numpy(scores), hidden @ v, rtol=1e-5, atol=1e-6
        )
    # d sum(scores) / dv is the sum of the hidden vectors, on either path.
    if keras.backend.backend() == "jax":
        import jax

        grad = jax.grad(lambda w: additive_scores(hidden, w).sum())(v)
        np.testing.assert_allclose(np.asarray(grad), hidden.sum((0, 1, 2)), rtol=1e-5)
        return
    variable = keras.Variable(v)
    for run in runs:
        (grad,) = gradients(
            lambda run=run: run(ops.convert_to_tensor(hidden), variable.value),
            [variable],
        )
        np.testing.assert_allclose(grad, hidden.sum((0, 1, 2)), rtol=1e-5)


def test_additive_energies_and_their_gradients_are_numpys():
    # vᵀ tanh(q_t + k_s) and the gradients of a weighted sum of the scores
    # for q, k and v, written out in NumPy.
    from keras_rnnattn._backend import additive_energies

    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 4)).astype("float32")
    v = rng.normal(size=4).astype("float32")
    w = rng.normal(size=(2, 3, 5)).astype("float32")
    hidden = np.tanh(q[:, :, None] + k[:, None])  # (B, T, S, units)
    np.testing.assert_allclose(
        ops.convert_to_numpy(additive_energies(q, k, v)), hidden @ v, rtol=1e-5
    )
    d_pre = w[..., None] * v * (1.0 - hidden**2)  # (B, T, S, units)
    want = [d_pre.sum(2), d_pre.sum(1), (w[..., None] * hidden).sum((0, 1, 2))]
    if keras.backend.backend() == "jax":
        import jax

        got = jax.grad(lambda *x: (additive_energies(*x) * w).sum(), argnums=(0, 1, 2))(
            q, k, v
        )
        got = [np.asarray(g) for g in got]
    else:
        variables = [keras.Variable(a) for a in (q, k, v)]
        got = gradients(
            lambda: (
                additive_energies(*[x.value for x in variables])
                * ops.convert_to_tensor(w)
            ),
            variables,
        )
    for g, expected in zip(got, want):
        np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="jax.checkpoint")
def test_additive_energies_keep_no_tanh_of_every_pair_for_the_backward_pass():
    # On JAX the (B, T, S, units) tanh is computed again in the backward pass:
    # the residuals are the (B, T, units) and (B, S, units) inputs and v.
    import contextlib
    import io

    import jax

    from keras_rnnattn._backend import additive_energies

    q, k, v = np.ones((2, 3, 4), "f4"), np.ones((2, 5, 4), "f4"), np.ones(4, "f4")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        jax.ad_checkpoint.print_saved_residuals(
            lambda q, k, v: additive_energies(q, k, v).sum(), q, k, v
        )
    assert "f32[2,3,4]" in printed.getvalue()
    assert "f32[2,3,5,4]" not in printed.getvalue(), printed.getvalue()


def test_best_tokens_take_the_first_of_tied_maxima():
    # Rows with their maximum at several tokens: the first is taken (TensorFlow
    # and JAX's top_k, torch's argmax eagerly and its integer minimum
    # compiled). A row of NaN gives a token in range.
    from keras_rnnattn._backend import best_tokens

    logits = np.zeros((3, 40), "float32")
    logits[0, [7, 21, 39]] = 2.0
    logits[1, [0, 5]] = 1.0
    runs = [best_tokens]
    if keras.backend.backend() == "torch":
        import torch

        runs.append(torch.compile(best_tokens, backend="eager", fullgraph=True))
    for run in runs:
        ids, values = run(keras.ops.convert_to_tensor(logits))
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(ids), [7, 0, 0])
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(values), [2, 1, 0])
        nan = np.full((1, 40), np.nan, "float32")
        (token,) = keras.ops.convert_to_numpy(run(keras.ops.convert_to_tensor(nan))[0])
        assert 0 <= token < 40


def test_sparse_cross_entropy_and_its_gradient_are_numpys():
    # Values and the gradient w * (softmax(z) - one_hot(label)) of a weighted
    # sum, also for logits far from 0 (the log-sum-exp is taken from the
    # largest logit) and for a label whose probability underflows a float32
    # (the loss is still logsumexp(z) - z[label], not infinite).
    from keras_rnnattn._backend import sparse_cross_entropy

    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(6, 40)) * 5).astype("float32")
    logits[0] += 500.0
    logits[1, 3] = -1e9  # a token that is never produced
    labels = rng.integers(0, 40, size=6).astype("int32")
    labels[1] = 4
    logits[2, labels[2]] -= 300.0  # p[label] about e^-300: 0 as a float32
    weights = rng.uniform(0.5, 2.0, size=6).astype("float32")
    shifted = logits.astype("float64") - logits.max(-1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(-1))
    want = log_sum - shifted[np.arange(6), labels]
    assert want[2] > 250.0
    softmax = np.exp(shifted - log_sum[:, None])
    want_grad = weights[:, None] * (softmax - np.eye(40, dtype="float32")[labels])

    got = sparse_cross_entropy(labels, keras.ops.convert_to_tensor(logits))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, rtol=1e-5)
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        grad = jax.grad(lambda z: (weights * sparse_cross_entropy(labels, z)).sum())(
            logits
        )
    elif backend == "tensorflow":
        import tensorflow as tf

        z = tf.Variable(logits)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(weights * sparse_cross_entropy(labels, z))
        grad = tape.gradient(loss, z)
    else:
        import torch

        z = torch.tensor(logits, requires_grad=True)
        loss = sparse_cross_entropy(torch.tensor(labels), z)
        (torch.tensor(weights) * loss).sum().backward()
        grad = z.grad
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(grad), want_grad, rtol=1e-4, atol=1e-6
    )


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's ops")
@pytest.mark.parametrize("limit", [None, 1])
def test_tf_cross_entropy_gradient_in_place_and_by_scatter(monkeypatch, limit):
    # The gradient subtracts at each label in place (`InplaceSub`, no scatter's
    # copy of the logits), with a static shape or one known only when run; past
    # `INPLACE_LIMIT` values (int32 indices), and under XLA, it scatters: the
    # same gradient.
    import tensorflow as tf

    from keras_rnnattn._backend.kernels import tf_cross_entropy

    if limit is not None:
        monkeypatch.setattr(tf_cross_entropy, "INPLACE_LIMIT", limit)
    rng = np.random.default_rng(1)
    cases = [(5, 7, (5, 7), False), (3, 40, (None, None), False), (4, 9, (4, 9), True)]
    for rows, classes, signature, jit_compile in cases:
        logits = rng.normal(size=(rows, classes)).astype("float32")
        labels = rng.integers(0, classes, size=rows).astype("int32")
        weights = rng.uniform(0.5, 2.0, size=rows).astype("float32")

        @tf.function(
            input_signature=[
                tf.TensorSpec(signature),
                tf.TensorSpec([None], tf.int32),
                tf.TensorSpec([None]),
            ],
            jit_compile=jit_compile,
        )
        def grad(z, y, w):
            with tf.GradientTape() as tape:
                tape.watch(z)
                loss = tf.reduce_sum(w * tf_cross_entropy.sparse_cross_entropy_tf(y, z))
            return tape.gradient(loss, z)

        shifted = np.exp(logits - logits.max(-1, keepdims=True))
        softmax = shifted / shifted.sum(-1, keepdims=True)
        want = weights[:, None] * (softmax - np.eye(classes)[labels])
        got = grad(logits, labels, weights).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        graph = grad.get_concrete_function().graph
        types = {op.type for op in graph.get_operations()}
        if signature[0] is None:  # decided when run: both in the graph
            assert "StatelessIf" in types or "If" in types
        elif jit_compile:  # XLA has no InplaceSub kernel (and scatters in place)
            assert "TensorScatterSub" in types and "InplaceSub" not in types
        elif limit is None:
            assert "InplaceSub" in types and "TensorScatterSub" not in types
        else:
            assert "TensorScatterSub" in types and "InplaceSub" not in types


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch's autograd")
def test_torch_cross_entropy_equals_pytorchs_and_runs_its_backward_once():
    # Eagerly, compiled, and without gradients: the values and gradients of
    # PyTorch's fused cross_entropy. A second backward of the same graph gets
    # the error that names the fix, not a wrong gradient.
    import torch

    from keras_rnnattn._backend.kernels.torch_cross_entropy import (
        sparse_cross_entropy_torch,
    )

    torch.manual_seed(0)
    logits = torch.randn(12, 30) * 4
    labels = torch.randint(0, 30, (12,), dtype=torch.int32)
    weights = torch.rand(12) + 0.5

    def grads(fn):
        z = logits.clone().requires_grad_()
        loss = fn(labels, z)
        (weights * loss).sum().backward()
        return loss.detach(), z.grad

    def stock(y, z):
        return torch.nn.functional.cross_entropy(z, y.long(), reduction="none")

    want_loss, want_grad = grads(stock)
    compiled = torch.compile(sparse_cross_entropy_torch, backend="eager")
    for fn in (sparse_cross_entropy_torch, compiled):
        loss, grad = grads(fn)
        torch.testing.assert_close(loss, want_loss)
        torch.testing.assert_close(grad, want_grad)
    with torch.no_grad():
        torch.testing.assert_close(
            sparse_cross_entropy_torch(labels, logits), want_loss
        )

    z = logits.clone().requires_grad_()
    loss = sparse_cross_entropy_torch(labels, z).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="once per forward pass"):
        loss.backward()


def test_log_mean_exp_is_numpys_mean_probability():
    # An ensemble's mean of its members' probabilities, with tokens that one
    # member or every member rules out (-inf) and members far apart.
    from keras_rnnattn._backend import log_mean_exp

    rng = np.random.default_rng(3)
    members = [
        np.log(rng.dirichlet(np.ones(40) * 0.3, size=6)).astype("float32")
        for _ in range(3)
    ]
    members[0][:, 5] = -np.inf  # one member rules token 5 out
    for m in members:
        m[:, 7] = -np.inf  # every member rules token 7 out
    members[2][0] -= 30.0  # far apart: exp underflows without the maximum
    runs = [log_mean_exp]
    if keras.backend.backend() == "torch":
        import torch

        # The branch a compiled step takes (Dynamo without inductor: fast).
        runs.append(torch.compile(log_mean_exp, backend="eager", fullgraph=True))
    for count in (1, 2, 3):
        given = members[:count]
        wide = np.stack(given).astype("float64")
        top = wide.max(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = top + np.log(np.exp(wide - np.where(np.isinf(top), 0, top)).mean(0))
        for run in runs:
            got = ops.convert_to_numpy(run([ops.convert_to_tensor(m) for m in given]))
            assert got.dtype == np.float32
            assert np.all(np.isneginf(got[:, 7]))
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="eager torch's ops")
def test_eager_log_mean_exp_folds_members_in_without_stacking_them():
    import torch
    from torch.profiler import profile

    from keras_rnnattn._backend import log_mean_exp

    members = [torch.randn(4, 30).log_softmax(-1) for _ in range(3)]
    with profile() as run:
        log_mean_exp(members)
    names = [event.key for event in run.key_averages()]
    counts = {event.key: event.count for event in run.key_averages()}
    assert counts.get("aten::logaddexp") == 2, names  # one per member after the first
    assert "aten::stack" not in names and "aten::logsumexp" not in names, names


@pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="torch runs a decoding function eagerly: Python branches on values",
)
def test_compiled_functions_trace_the_python_as_written():
    """The models' compiled decoding (`_backend.jit.compiled`) is traced as
    written on JAX and TensorFlow alike: a Python `if` on a tensor's value is an
    error on both (TensorFlow's AutoGraph would otherwise rewrite it into a
    `tf.cond` on TensorFlow only), and `ops.cond` is the branch of both."""
    from keras_rnnattn._backend.decoding.jit import compiled

    model = keras.layers.Dense(2)
    model.build((None, 3))
    x = np.ones((1, 3), "float32")

    def python_branch(x):
        y = model(x)
        if ops.sum(y) > 0:  # a tensor's value, unknown while tracing
            return y
        return -y

    with pytest.raises(TypeError):
        compiled(model, python_branch)(x)

    def keras_branch(x):
        y = model(x)
        return ops.cond(ops.sum(y) > 0, lambda: y, lambda: -y)

    y = ops.convert_to_numpy(model(x))
    want = y if y.sum() > 0 else -y
    np.testing.assert_allclose(
        ops.convert_to_numpy(compiled(model, keras_branch)(x)), want
    )
