"""The default optimizer of the models: Keras's Adam on the backend's fused kernels."""

import keras
from keras import ops

from keras_rnnattn._backend import adam_update, adam_variable_update
from keras_rnnattn._backend import clip_by_global_norm as fused_clip_by_global_norm
from keras_rnnattn._backend import clip_by_norm as fused_clip_by_norm


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class InPlaceAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` updated in place by the backend's fused kernels.

    The same algorithm, arguments and variables as Keras's Adam (Kingma & Ba
    2015, with the bias corrections folded into the step size):

        m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g²;
        w <- w - lr sqrt(1 - b2^t) / (1 - b1^t) · m / (sqrt(v) + eps)

    Keras's Adam makes new tensors the size of the weights for each of its
    element-wise ops on eager torch and on TensorFlow (five a step, and its
    global norm clipping two more). Here the update is one kernel per weight
    where the backend has one (`keras_rnnattn._backend.kernels.adam`): on torch the
    fused CPU kernel of `torch.optim.Adam(fused=True)` (in-place `_foreach_`
    ops on an accelerator and under `torch.compile`), with clipping in place
    as `torch.nn.utils.clip_grad_norm_`; on TensorFlow `ResourceApplyAdam`.
    Per-variable `clipnorm` is in place on torch too. On JAX (XLA fuses the
    update already), and with `amsgrad` or a callable beta, the update is
    Keras's.

    With `use_ema=True`, the average that `fit` writes into the weights at
    its end is a copy: Keras's Adam makes each weight and its average one
    buffer on JAX, which the next `fit` donates twice to its train step
    ("Attempt to donate the same buffer twice", and the model's weights are
    gone).

    Args:
        **kwargs: the arguments of `keras.optimizers.Adam`.

    Example:

    >>> optimizer = InPlaceAdam(learning_rate=1e-3, global_clipnorm=5.0)
    >>> variable = keras.Variable([1.0, 2.0])
    >>> optimizer.apply([keras.ops.convert_to_tensor([0.5, -0.5])], [variable])
    >>> [round(float(x), 4) for x in keras.ops.convert_to_numpy(variable)]
    [0.999, 2.001]
    """

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # Keras's optimizers choose by backend in `_backend_update_step`,
        # `update_step` and `_clip_gradients`; the fused kernels take over
        # there, and each hook falls back to Keras's where none applies.
        if adam_update(self, grads, trainable_variables, learning_rate):
            return None
        return super()._backend_update_step(grads, trainable_variables, learning_rate)

    def update_step(self, gradient, variable, learning_rate):
        if adam_variable_update(self, gradient, variable, learning_rate):
            return None
        return super().update_step(gradient, variable, learning_rate)

    def _clip_gradients(self, grads):
        clipped = None
        if self.clipnorm and self.clipnorm > 0:
            clipped = fused_clip_by_norm(grads, self.clipnorm)
        elif self.global_clipnorm and self.global_clipnorm > 0:
            clipped = fused_clip_by_global_norm(grads, self.global_clipnorm)
        if clipped is not None:
            return clipped
        return super()._clip_gradients(grads)

    def _overwrite_model_variables_with_average_value(self, trainable_variables):
        # Keras assigns each average itself: on JAX the weight and its average
        # would then share one buffer.
        averages = self._model_variables_moving_average
        if len(trainable_variables) != len(averages):
            return super()._overwrite_model_variables_with_average_value(
                trainable_variables
            )  # Keras's error
        for variable, average in zip(trainable_variables, averages):
            if average is not None:
                variable.assign(ops.copy(average))
