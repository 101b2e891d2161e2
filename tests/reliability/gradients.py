"""Loss and gradients of a model, as NumPy, on every backend (for the reliability tests)."""

import keras
import numpy as np
from keras import ops


def to_numpy(x):
    """A tensor, or a nested structure of tensors, as float32 NumPy arrays."""
    return keras.tree.map_structure(
        lambda t: np.asarray(ops.convert_to_numpy(ops.cast(t, "float32"))), x
    )


def loss_and_gradients(model, fn):
    """Runs `fn()` (which calls `model` and returns `(loss, outputs)`) and
    differentiates the scalar loss w.r.t. the model's trainable variables.

    The one backend branch of the reliability tests: each backend has its own
    automatic differentiation (JAX's is compiled, as `fit` would compile it).

    Returns:
        `(loss, gradients, outputs)`: a float, a list of float32 arrays (zeros
        for a variable the loss does not reach) and the outputs (any nested
        structure) as float32 arrays.
    """
    variables = model.trainable_variables
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss, outputs = fn()
            loss = ops.cast(loss, "float32")
        grads = tape.gradient(loss, [v.value for v in variables])
    elif backend == "jax":
        import jax

        others = model.non_trainable_variables

        @jax.jit
        def run(values, other_values):
            def pure(values):
                mapping = list(zip(variables, values)) + list(zip(others, other_values))
                with keras.StatelessScope(state_mapping=mapping):
                    loss, outputs = fn()
                return ops.cast(loss, "float32"), outputs

            return jax.value_and_grad(pure, has_aux=True)(values)

        (loss, outputs), grads = run(
            [v.value for v in variables], [v.value for v in others]
        )
    else:
        import torch

        loss, outputs = fn()
        loss = ops.cast(loss, "float32")
        grads = torch.autograd.grad(
            loss, [v.value for v in variables], allow_unused=True
        )
    grads = [
        np.zeros(v.shape, "float32") if g is None else to_numpy(g)
        for v, g in zip(variables, grads)
    ]
    return float(to_numpy(loss)), grads, to_numpy(outputs)
