"""The default optimizer of the models: Keras's Adam, updated in place on torch."""

import math

import keras


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class InPlaceAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose torch update allocates no temporaries.

    The same algorithm, arguments and variables as Keras's Adam (Kingma & Ba
    2015, with the bias corrections folded into the step size):

        m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g²;
        w <- w - lr sqrt(1 - b2^t) / (1 - b1^t) · m / (sqrt(v) + eps)

    On torch, Keras's Adam makes five new tensors the size of the weights a
    step (`g²`, `alpha m`, `sqrt(v)`, `+ eps`, the quotient), and its global
    norm clipping two more (`g²`, `scale g`); here both run as in-place
    `torch._foreach_*` ops, as `torch.optim.Adam` and
    `torch.nn.utils.clip_grad_norm_` do (one temporary, `sqrt(v)`). On the
    other backends, and with `amsgrad` or a callable beta, it is Keras's Adam
    unchanged (XLA and TensorFlow fuse those element-wise ops already).
    """

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if not _in_place_ok(self):
            return super()._backend_update_step(
                grads, trainable_variables, learning_rate
            )
        return _torch_adam_update(self, grads, trainable_variables, learning_rate)

    def _clip_gradients(self, grads):
        # Keras's optimizers branch by backend in `_backend_update_step` and
        # `_clip_gradients`; this class overrides those hooks for torch only.
        if (
            keras.backend.backend() == "torch"
            and not self.clipnorm
            and self.global_clipnorm
            and self.global_clipnorm > 0
        ):
            return _torch_clip_by_global_norm(grads, self.global_clipnorm)
        return super()._clip_gradients(grads)


def _in_place_ok(optimizer):
    # The in-place update is written for torch (see `InPlaceAdam`).
    return (
        keras.backend.backend() == "torch"
        and not optimizer.amsgrad
        and all(
            isinstance(beta, (int, float))
            for beta in (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon)
        )
    )


def _torch_adam_update(optimizer, grads, variables, learning_rate, on_device=None):
    """The torch branch of `InPlaceAdam`: Adam's update with `_foreach_` ops.

    `on_device` keeps the step size a tensor (None: where the weights are not on
    the CPU, or under `torch.compile`, which would compile the step again for
    each new number); False reads it into a Python number.
    """
    import torch

    with torch.no_grad():
        weights = [v.value for v in variables]
        index = [optimizer._get_variable_index(v) for v in variables]
        m = [optimizer._momentums[i].value for i in index]
        v = [optimizer._velocities[i].value for i in index]
        b1, b2 = optimizer.beta_1, optimizer.beta_2
        grads = [g.to(w.dtype) for g, w in zip(grads, weights)]
        torch._foreach_lerp_(m, grads, 1.0 - b1)  # m + (1 - b1)(g - m)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - b2)
        denominator = torch._foreach_sqrt(v)
        torch._foreach_add_(denominator, optimizer.epsilon)
        if on_device is None:
            on_device = weights[0].device.type != "cpu" or torch.compiler.is_compiling()
        if not on_device:
            # Reading the step and learning rate costs nothing on the CPU.
            step = float(keras.ops.convert_to_numpy(optimizer.iterations)) + 1.0
            lr = float(keras.ops.convert_to_numpy(learning_rate))
            alpha = lr * math.sqrt(1.0 - b2**step) / (1.0 - b1**step)
            torch._foreach_addcdiv_(weights, m, denominator, value=-alpha)
            return
        # On an accelerator a read waits for the device: the step size stays a
        # tensor there (as torch.optim.Adam(capturable=True) does).
        step = optimizer.iterations.value.to(torch.float32) + 1.0
        lr = keras.ops.convert_to_tensor(learning_rate, "float32")
        alpha = lr * torch.sqrt(1.0 - b2**step) / (1.0 - b1**step)
        update = torch._foreach_div(m, denominator)
        torch._foreach_mul_(update, -alpha)
        torch._foreach_add_(weights, update)


def _torch_clip_by_global_norm(grads, clip_norm):
    """Keras's `clip_by_global_norm` in place on torch: one norm pass, one scale.

    As in Keras, a non-finite norm makes every gradient NaN (so the step is
    visibly bad rather than silently zero).
    """
    import torch

    with torch.no_grad():
        present = [g for g in grads if g is not None]
        norm = torch.linalg.vector_norm(
            torch.stack(torch._foreach_norm(present)).float()
        )
        # clamp takes the bound as a number: no host-to-device copy (a GPU sync).
        scale = clip_norm * torch.clamp(1.0 / norm, max=1.0 / clip_norm)
        scale = scale + (norm - norm)
        torch._foreach_mul_(present, scale.to(present[0].dtype))
    return grads
