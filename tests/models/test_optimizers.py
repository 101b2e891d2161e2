import doctest
import functools

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn._backend.kernels import adam as adam_kernels
from keras_rnnattn.models import _optimizers
from keras_rnnattn.models._optimizers import InPlaceAdam


def adam_reference(
    weights, grads, lr, b1=0.9, b2=0.999, eps=1e-7, clip=None, clipnorm=None
):
    """Kingma & Ba's Adam, as Keras folds the bias corrections, in NumPy;
    `clip` bounds the global norm of the gradients, `clipnorm` each one's."""
    weights = [w.copy() for w in weights]
    m = [np.zeros_like(w) for w in weights]
    v = [np.zeros_like(w) for w in weights]
    for t, step_grads in enumerate(grads, start=1):
        if clip is not None:
            norm = np.sqrt(sum((g.astype("float64") ** 2).sum() for g in step_grads))
            step_grads = [g * min(1.0, clip / norm) for g in step_grads]
        if clipnorm is not None:
            step_grads = [
                g * clipnorm / max(np.sqrt((g.astype("float64") ** 2).sum()), clipnorm)
                for g in step_grads
            ]
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        for i, g in enumerate(step_grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            weights[i] = weights[i] - alpha * m[i] / (np.sqrt(v[i]) + eps)
    return weights


@pytest.mark.parametrize("on_device", [None, True], ids=["default", "on_device"])
@pytest.mark.parametrize("clip, clipnorm", [(None, None), (0.5, None), (None, 2.0)])
def test_in_place_adam_is_adam(clip, clipnorm, on_device, monkeypatch):
    if on_device:
        # The `_foreach_` update, its step size kept a tensor, as on a GPU or
        # under torch.compile (the default on the CPU is the fused kernel).
        if keras.backend.backend() != "torch":
            pytest.skip("the in-place update is torch's")
        monkeypatch.setattr(
            adam_kernels,
            "_torch_adam_update",
            functools.partial(adam_kernels._torch_adam_update, fused=False),
        )
    rng = np.random.default_rng(0)
    start = [
        rng.normal(size=(3, 4)).astype("float32"),
        rng.normal(size=(4,)).astype("float32"),
    ]
    grads = [
        [rng.normal(size=w.shape).astype("float32") for w in start] for _ in range(5)
    ]
    variables = [keras.Variable(w) for w in start]
    options = {"global_clipnorm": clip, "clipnorm": clipnorm}
    optimizer = InPlaceAdam(learning_rate=0.01, **options)
    for step_grads in grads:
        optimizer.apply([ops.convert_to_tensor(g) for g in step_grads], variables)
    want = adam_reference(start, grads, 0.01, clip=clip, clipnorm=clipnorm)
    if clipnorm is not None:  # the clipping acted, on some gradients only
        norms = [np.linalg.norm(g) for step_grads in grads for g in step_grads]
        assert min(norms) < clipnorm < max(norms)
    for variable, expected in zip(variables, want):
        np.testing.assert_allclose(
            ops.convert_to_numpy(variable), expected, rtol=1e-5, atol=1e-6
        )
    # Keras's own Adam takes the same steps.
    keras_variables = [keras.Variable(w) for w in start]
    keras_adam = keras.optimizers.Adam(learning_rate=0.01, **options)
    for step_grads in grads:
        keras_adam.apply(
            [ops.convert_to_tensor(g) for g in step_grads], keras_variables
        )
    for ours, theirs in zip(variables, keras_variables):
        np.testing.assert_allclose(
            ops.convert_to_numpy(ours),
            ops.convert_to_numpy(theirs),
            rtol=1e-5,
            atol=1e-6,
        )


def test_in_place_adam_non_finite_norm_gives_nan_as_keras():
    variable = keras.Variable(np.ones((2,), "float32"))
    optimizer = InPlaceAdam(learning_rate=0.1, global_clipnorm=1.0)
    optimizer.apply(
        [ops.convert_to_tensor(np.array([np.inf, 1.0], "float32"))], [variable]
    )
    assert np.isnan(ops.convert_to_numpy(variable)).all()


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_in_place_adam_clips_each_non_finite_gradient_as_keras(bad):
    # Per-variable clipping: an infinite norm zeroes the finite entries (and
    # the infinite one becomes NaN), a NaN norm makes the gradient NaN; the
    # other variable's gradient is clipped alone. Compared step for step with
    # Keras's Adam.
    grads = [np.array([bad, 1.0], "float32"), np.array([3.0, -4.0], "float32")]
    weights = {}
    for name, adam in [("ours", InPlaceAdam), ("keras", keras.optimizers.Adam)]:
        variables = [keras.Variable(np.ones((2,), "float32")) for _ in grads]
        adam(learning_rate=0.1, clipnorm=1.0).apply(
            [ops.convert_to_tensor(g) for g in grads], variables
        )
        weights[name] = [ops.convert_to_numpy(v) for v in variables]
    for ours, theirs in zip(weights["ours"], weights["keras"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True)
    assert np.isnan(weights["ours"][0][0])
    np.testing.assert_allclose(weights["ours"][1], [0.9, 1.1], rtol=1e-5)


def test_in_place_adam_round_trips_its_config():
    optimizer = InPlaceAdam(learning_rate=0.003, beta_1=0.8, global_clipnorm=5.0)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(optimizer)
    )
    assert type(restored) is InPlaceAdam
    assert restored.get_config() == optimizer.get_config()


def test_in_place_adam_compiles_once_under_torch_compile():
    # Under `compile(jit_compile=True)` Keras runs the update inside
    # `torch.compile`: a step size read into a Python number would be a new
    # constant at every step, so each step compiled the update again (with
    # inductor, torch.compile's default, as Keras calls it).
    if keras.backend.backend() != "torch":
        pytest.skip("the in-place update is torch's")
    import torch
    from torch._dynamo.utils import counters

    rng = np.random.default_rng(0)
    start = [rng.normal(size=(3, 4)).astype("float32")]
    grads = [[rng.normal(size=(3, 4)).astype("float32")] for _ in range(5)]
    variables = [keras.Variable(w) for w in start]
    optimizer = InPlaceAdam(learning_rate=0.01, global_clipnorm=0.5)
    optimizer.build(variables)
    torch._dynamo.reset()
    counters.clear()
    apply = torch.compile(optimizer.apply)
    graphs = []
    for step_grads in grads:
        apply([ops.convert_to_tensor(g) for g in step_grads], variables)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[0] > 0
    assert graphs[-1] == graphs[1], graphs  # compiled once, then reused
    want = adam_reference(start, grads, 0.01, clip=0.5)
    np.testing.assert_allclose(
        ops.convert_to_numpy(variables[0]), want[0], rtol=1e-5, atol=1e-6
    )


def test_in_place_adam_runs_torchs_fused_kernel_on_the_cpu():
    # One kernel a weight (torch.optim.Adam(fused=True)'s), with Keras's eps:
    # the same weights as Keras's Adam after a few steps.
    if keras.backend.backend() != "torch":
        pytest.skip("the fused kernel is torch's")
    from torch.profiler import profile

    rng = np.random.default_rng(1)
    start = [rng.normal(size=(5, 3)).astype("float32")]
    ours = InPlaceAdam(learning_rate=0.05, epsilon=1e-2)
    ours_vars = [keras.Variable(start[0])]
    keras_adam = keras.optimizers.Adam(learning_rate=0.05, epsilon=1e-2)
    keras_vars = [keras.Variable(start[0])]
    for _ in range(4):
        grads = [rng.normal(size=(5, 3)).astype("float32")]
        with profile() as prof:
            ours.apply([ops.convert_to_tensor(g) for g in grads], ours_vars)
        keras_adam.apply([ops.convert_to_tensor(g) for g in grads], keras_vars)
        ran = {event.key for event in prof.key_averages()}
        assert "aten::_fused_adam_" in ran, sorted(ran)
    # A large eps makes the difference between eps before and after the
    # bias correction visible (about 1e-3 here): the kernel's eps is rescaled.
    np.testing.assert_allclose(
        ops.convert_to_numpy(ours_vars[0]),
        ops.convert_to_numpy(keras_vars[0]),
        rtol=1e-6,
        atol=1e-6,
    )


def test_in_place_adam_clips_each_gradient_in_place_on_torch():
    # Per-variable `clipnorm` on torch: one `_foreach_norm` over the gradients
    # and one in-place `_foreach_mul_`, not Keras's ops (which square each
    # gradient); the numbers are those of the NumPy reference.
    if keras.backend.backend() != "torch":
        pytest.skip("the in-place clipping is torch's")
    from torch.profiler import profile

    rng = np.random.default_rng(4)
    start = [rng.normal(size=(4, 3)).astype("float32"), np.zeros(3, "float32")]
    grads = [[3 * rng.normal(size=w.shape).astype("float32") for w in start]]
    variables = [keras.Variable(w) for w in start]
    optimizer = InPlaceAdam(learning_rate=0.01, clipnorm=1.0)
    optimizer.build(variables)
    with profile() as prof:
        optimizer.apply([ops.convert_to_tensor(g) for g in grads[0]], variables)
    ran = {event.key for event in prof.key_averages()}
    assert {"aten::_foreach_norm", "aten::_foreach_mul_"} <= ran, sorted(ran)
    assert "aten::square" not in ran and "aten::pow" not in ran, sorted(ran)
    want = adam_reference(start, grads, 0.01, clipnorm=1.0)
    for variable, expected in zip(variables, want):
        np.testing.assert_allclose(
            ops.convert_to_numpy(variable), expected, rtol=1e-5, atol=1e-6
        )


def test_in_place_adam_is_one_resource_apply_adam_per_variable_on_tensorflow():
    if keras.backend.backend() != "tensorflow":
        pytest.skip("ResourceApplyAdam is TensorFlow's")
    import tensorflow as tf

    rng = np.random.default_rng(2)
    start = [rng.normal(size=(4, 2)).astype("float32"), np.zeros((2,), "float32")]
    variables = [keras.Variable(w) for w in start]
    optimizer = InPlaceAdam(learning_rate=0.01, global_clipnorm=1.0)
    optimizer.build(variables)

    @tf.function
    def step(g0, g1):
        optimizer.apply([g0, g1], variables)

    grads = [tf.constant(rng.normal(size=w.shape).astype("float32")) for w in start]
    graph = step.get_concrete_function(*grads).graph
    types = [op.type for op in graph.get_operations()]
    for function in graph._functions.values():  # the bodies of any cond
        types += [node.op for node in function.definition.node_def]
    assert types.count("ResourceApplyAdam") == len(variables), sorted(set(types))
    for _ in range(3):
        step(*grads)
    want = adam_reference(start, [[g.numpy() for g in grads]] * 3, 0.01, clip=1.0)
    for variable, expected in zip(variables, want):
        np.testing.assert_allclose(
            ops.convert_to_numpy(variable), expected, rtol=1e-5, atol=1e-6
        )


def test_in_place_adam_takes_an_embeddings_sparse_gradient_on_tensorflow():
    # An embedding's gradient is a tf.IndexedSlices, here with a repeated id.
    # The clipping and the fused kernel take it dense (the slices of one row
    # summed), so the weights are Adam's of the clipped dense gradient, as on
    # JAX and torch. (Keras's
    # own Adam squares each slice before summing: 0.005 against 0.009 for v
    # after one step of slices 1 and 2 on one row.)
    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.IndexedSlices are TensorFlow's")
    import tensorflow as tf

    rng = np.random.default_rng(3)
    start = rng.normal(size=(10, 3)).astype("float32")
    table = keras.Variable(start)
    optimizer = InPlaceAdam(learning_rate=0.02, global_clipnorm=0.5)
    ids = tf.constant([1, 1, 4, 7])
    dense_grads = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, ids) ** 2)
        (grad,) = tape.gradient(loss, [table])
        assert isinstance(grad, tf.IndexedSlices)
        dense_grads.append([tf.convert_to_tensor(grad).numpy()])
        optimizer.apply([grad], [table])
    assert np.linalg.norm(dense_grads[0][0]) > 0.5  # clipped, by the dense norm
    (want,) = adam_reference([start], dense_grads, 0.02, clip=0.5)
    np.testing.assert_allclose(ops.convert_to_numpy(table), want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want[1], start[1])  # the repeated row trained


def test_in_place_adam_docstring_example_runs():
    result = doctest.testmod(_optimizers)
    assert result.attempted > 0 and result.failed == 0
