import functools

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnnattn.models import _optimizers
from keras_rnnattn.models._optimizers import InPlaceAdam


def adam_reference(weights, grads, lr, b1=0.9, b2=0.999, eps=1e-7, clip=None):
    """Kingma & Ba's Adam, as Keras folds the bias corrections, in NumPy."""
    weights = [w.copy() for w in weights]
    m = [np.zeros_like(w) for w in weights]
    v = [np.zeros_like(w) for w in weights]
    for t, step_grads in enumerate(grads, start=1):
        if clip is not None:
            norm = np.sqrt(sum((g.astype("float64") ** 2).sum() for g in step_grads))
            step_grads = [g * min(1.0, clip / norm) for g in step_grads]
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        for i, g in enumerate(step_grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            weights[i] = weights[i] - alpha * m[i] / (np.sqrt(v[i]) + eps)
    return weights


@pytest.mark.parametrize("on_device", [None, True], ids=["default", "on_device"])
@pytest.mark.parametrize("clip", [None, 0.5])
def test_in_place_adam_is_adam(clip, on_device, monkeypatch):
    if on_device:
        # The step size kept a tensor, as on a GPU (no read from the device).
        if keras.backend.backend() != "torch":
            pytest.skip("the in-place update is torch's")
        monkeypatch.setattr(
            _optimizers,
            "_torch_adam_update",
            functools.partial(_optimizers._torch_adam_update, on_device=True),
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
    optimizer = InPlaceAdam(learning_rate=0.01, global_clipnorm=clip)
    for step_grads in grads:
        optimizer.apply([ops.convert_to_tensor(g) for g in step_grads], variables)
    want = adam_reference(start, grads, 0.01, clip=clip)
    for variable, expected in zip(variables, want):
        np.testing.assert_allclose(
            ops.convert_to_numpy(variable), expected, rtol=1e-5, atol=1e-6
        )
    # Keras's own Adam takes the same steps.
    keras_variables = [keras.Variable(w) for w in start]
    keras_adam = keras.optimizers.Adam(learning_rate=0.01, global_clipnorm=clip)
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
