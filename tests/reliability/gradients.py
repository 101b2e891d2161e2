"""Loss and gradients of a model, as NumPy, on every backend (for the reliability tests)."""

import keras
import numpy as np
from keras import ops


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


def loss_and_gradients(model, loss_fn):
    """`loss_fn()` (a scalar that calls `model`) and its gradients w.r.t. the
    model's trainable variables, as float32 NumPy values.

    The one backend branch of the reliability tests: each backend has its own
    automatic differentiation.
    """
    variables = model.trainable_variables
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = ops.cast(loss_fn(), "float32")
        grads = tape.gradient(loss, [v.value for v in variables])
    elif backend == "jax":
        import jax

        others = [(v, v.value) for v in model.non_trainable_variables]

        def pure(values):
            mapping = list(zip(variables, values)) + others
            with keras.StatelessScope(state_mapping=mapping):
                return ops.cast(loss_fn(), "float32")

        loss, grads = jax.value_and_grad(pure)([v.value for v in variables])
    else:
        import torch

        loss = ops.cast(loss_fn(), "float32")
        grads = torch.autograd.grad(
            loss, [v.value for v in variables], allow_unused=True
        )
    grads = [
        np.zeros(v.shape, "float32") if g is None else to_numpy(g)
        for v, g in zip(variables, grads)
    ]
    return float(to_numpy(loss)), grads
