"""Adam's update and global-norm clipping as the backend's own fused kernels.

Keras's Adam writes its update in `keras.ops`: on eager torch and on
TensorFlow (without XLA) each of its element-wise ops makes a new tensor the
size of the weights. These functions run the same update (Kingma & Ba 2015,
the bias corrections folded into the step size, as Keras does):

    m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g²;
    w <- w - lr sqrt(1 - b2^t) / (1 - b1^t) · m / (sqrt(v) + eps)

as one kernel where the backend has one, and return False where the caller
should take Keras's own update (JAX, whose XLA fuses it already; `amsgrad`; a
callable beta). A driver choice: the values are Adam's of the dense gradient,
to float rounding, on every backend. (Keras's own TensorFlow Adam and global
norm differ from that for a `tf.IndexedSlices` gradient with a repeated index,
an embedding row looked up twice in a batch: they square each slice before
adding the slices of one row.)

- torch, eager on the CPU: `torch._fused_adam_`, the kernel of
  `torch.optim.Adam(fused=True)`: one pass over w, g, m and v per weight.
  PyTorch adds eps after dividing sqrt(v) by sqrt(1 - b2^t); eps times that
  root gives Keras's update exactly.
- torch elsewhere (an accelerator, or inside `torch.compile`): in-place
  `torch._foreach_*` ops with the step size kept a tensor (no read from the
  device, and no new constant for Dynamo at each step).
- TensorFlow: `ResourceApplyAdam` per variable, TensorFlow's own fused
  kernel of the same formula (an XLA kernel too, under `jit_compile`).

Global-norm clipping (`clip_by_global_norm`) too: in place on torch, one
`l2_loss` a gradient on TensorFlow; and per-variable clipping (`clip_by_norm`)
in place on torch.
"""

import math

import keras

import keras_rnnattn._backend._torch_private as _torch_private


def _betas_are_numbers(optimizer):
    return not optimizer.amsgrad and all(
        isinstance(beta, (int, float))
        for beta in (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon)
    )


def adam_update(optimizer, grads, variables, learning_rate):
    """Updates all `variables` by Adam; False where Keras's update should run.

    Args:
        optimizer: the `keras.optimizers.Adam`, for its betas, epsilon, step
            count and slot variables.
        grads: the gradients, one per variable.
        variables: the Keras variables.
        learning_rate: the learning rate of this step, a tensor.

    Returns:
        True if the update ran (torch), False otherwise.
    """
    if keras.backend.backend() != "torch" or not _betas_are_numbers(optimizer):
        return False
    _torch_adam_update(optimizer, grads, variables, learning_rate)
    return True


def adam_variable_update(optimizer, gradient, variable, learning_rate):
    """Updates one variable by Adam; False where Keras's update should run.

    TensorFlow's Keras optimizer updates one variable at a time (under a
    distribution strategy's `update`), so its fused kernel is taken here.

    Args:
        optimizer: the `keras.optimizers.Adam`.
        gradient: the variable's gradient (dense or `tf.IndexedSlices`).
        variable: the `tf.Variable` Keras passes to `update_step`.
        learning_rate: the learning rate of this step, a tensor.

    Returns:
        True if the update ran (TensorFlow), False otherwise.
    """
    if keras.backend.backend() != "tensorflow" or not _betas_are_numbers(optimizer):
        return False
    import tensorflow as tf

    dtype = variable.dtype
    index = optimizer._get_variable_index(variable)
    m = optimizer._momentums[index]
    v = optimizer._velocities[index]
    step = tf.cast(optimizer.iterations + 1, dtype)
    b1 = tf.constant(optimizer.beta_1, dtype)
    b2 = tf.constant(optimizer.beta_2, dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle,
        m=m.value.handle,
        v=v.value.handle,
        beta1_power=tf.pow(b1, step),
        beta2_power=tf.pow(b2, step),
        lr=tf.cast(learning_rate, dtype),
        beta1=b1,
        beta2=b2,
        epsilon=tf.constant(optimizer.epsilon, dtype),
        grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
    )
    return True


def clip_by_global_norm(grads, clip_norm):
    """Keras's `clip_by_global_norm` with the backend's fused norms; None on JAX.

    torch: one norm pass and one scale in place, as
    `torch.nn.utils.clip_grad_norm_`. TensorFlow: each `tf.IndexedSlices`
    (an embedding's gradient) made dense once, here rather than again in the
    update, and each norm one `l2_loss` kernel, without the squares Keras
    writes out; the norm is that of the dense gradient (Keras squares each
    slice of a repeated id before summing them). As in Keras, a non-finite
    norm makes every gradient NaN (so the step is visibly bad rather than
    silently zero).

    Args:
        grads: the gradients (None for a variable without one).
        clip_norm: float, the largest global norm.

    Returns:
        The clipped gradients (torch: `grads`, scaled in place), or None on
        JAX: clip with Keras's op.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        dense = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        present = [g for g in dense if g is not None]
        squares = tf.add_n(
            [2.0 * tf.nn.l2_loss(tf.cast(g, "float32")) for g in present]
        )
        norm = tf.sqrt(squares)
        scale = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm)
        scale = scale + (norm - norm)
        return [None if g is None else g * tf.cast(scale, g.dtype) for g in dense]
    if backend != "torch":
        return None
    import torch

    with torch.no_grad():
        present = [g for g in grads if g is not None]
        norm = torch.linalg.vector_norm(
            torch.stack(_torch_private.foreach("norm")(present)).float()
        )
        # clamp takes the bound as a number: no host-to-device copy (a GPU sync).
        scale = clip_norm * torch.clamp(1.0 / norm, max=1.0 / clip_norm)
        scale = scale + (norm - norm)
        _torch_private.foreach("mul_")(present, scale.to(present[0].dtype))
    return grads


def clip_by_norm(grads, clip_norm):
    """Keras's per-variable `clipnorm` with torch's fused norms; None elsewhere.

    Each gradient g becomes `g * clip_norm / max(|g|, clip_norm)`, scaled in
    place: one `_foreach_norm` over all gradients and one `_foreach_mul_`,
    where Keras's `keras.ops` form writes out g², g * clip_norm and the
    quotient for each. Non-finite norms give what Keras's give: a NaN norm
    makes the gradient NaN, an infinite one zeroes its finite entries.
    TensorFlow's Keras optimizer already calls `tf.clip_by_norm`; JAX's XLA
    fuses Keras's ops.

    Args:
        grads: the gradients (None for a variable without one).
        clip_norm: float, the largest norm of each gradient.

    Returns:
        `grads`, scaled in place (torch), or None: clip with Keras's ops.
    """
    if keras.backend.backend() != "torch":
        return None
    import torch

    present = [g for g in grads if g is not None]
    if not present:
        return grads
    with torch.no_grad():
        norms = torch.stack(_torch_private.foreach("norm")(present))  # (n,)
        # clamp takes the bound as a number: no host-to-device copy (a GPU sync).
        scales = clip_norm / torch.clamp(norms, min=clip_norm)  # (n,)
        _torch_private.foreach("mul_")(present, list(scales.unbind()))
    return grads


def _torch_adam_update(optimizer, grads, variables, learning_rate, fused=None):
    """The torch update: the fused CPU kernel, or in-place `_foreach_` ops.

    `fused` None: the fused kernel where the weights are on the CPU and
    nothing is being compiled; False: the `_foreach_` ops, whose step size
    stays a tensor.
    """
    import torch

    with torch.no_grad():
        weights = [v.value for v in variables]
        index = [optimizer._get_variable_index(v) for v in variables]
        m = [optimizer._momentums[i].value for i in index]
        v = [optimizer._velocities[i].value for i in index]
        b1, b2 = optimizer.beta_1, optimizer.beta_2
        grads = [g.to(w.dtype).contiguous() for g, w in zip(grads, weights)]
        if fused is None:
            fused = weights[0].device.type == "cpu" and not (
                torch.compiler.is_compiling()
            )
        if fused:
            # Reading the step and learning rate costs nothing on the CPU.
            step = optimizer.iterations.value.to(torch.float32) + 1.0  # a copy
            t = float(step)
            _torch_private.fused_adam()(
                weights,
                grads,
                m,
                v,
                [],
                [step] * len(weights),
                lr=float(keras.ops.convert_to_numpy(learning_rate)),
                beta1=b1,
                beta2=b2,
                weight_decay=0.0,
                eps=optimizer.epsilon / math.sqrt(1.0 - b2**t),
                amsgrad=False,
                maximize=False,
            )
            return
        foreach = _torch_private.foreach
        foreach("lerp_")(m, grads, 1.0 - b1)  # m + (1 - b1)(g - m)
        foreach("mul_")(v, b2)
        foreach("addcmul_")(v, grads, grads, value=1.0 - b2)
        denominator = foreach("sqrt")(v)
        foreach("add_")(denominator, optimizer.epsilon)
        # On an accelerator a read waits for the device: the step size stays a
        # tensor there (as torch.optim.Adam(capturable=True) does).
        step = optimizer.iterations.value.to(torch.float32) + 1.0
        lr = keras.ops.convert_to_tensor(learning_rate, "float32")
        alpha = lr * torch.sqrt(1.0 - b2**step) / (1.0 - b1**step)
        update = foreach("div")(m, denominator)
        foreach("mul_")(update, -alpha)
        foreach("add_")(weights, update)
