"""Losses and metrics over token sequences padded with `pad_id`."""

import keras
from keras import ops

from keras_rnnattn._backend import sparse_cross_entropy
from keras_rnnattn.ops import device_scalar


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class MaskedSparseCrossEntropy(keras.losses.Loss):
    """Cross-entropy from logits, averaged over the tokens whose label is not `pad_id`.

    The cross-entropy of the flattened `(B T, V)` logits (from one softmax
    kernel on TensorFlow, fused on torch, `logsumexp` minus the label's logit
    on JAX), without the masked copy of the logits that Keras's `ignore_class`
    makes, then the mean over real tokens. Sample weights are not supported.

    `call` returns per-token values whose mean over all `B T` positions (the
    default `"sum_over_batch_size"` reduction) is the mean over real tokens, so
    that Keras's reduction, and its scaling of the loss by the number of
    replicas under a `tf.distribute` strategy, apply as to any Keras loss.

    With `label_smoothing` ε > 0 the target is (1 - ε) on the label plus ε / V
    spread over the V classes (Szegedy et al. 2016): the loss is
    (1 - ε) · nll + ε · (logsumexp(z) - mean(z)), the cross-entropy against
    that smoothed distribution.
    """

    def __init__(
        self,
        pad_id=0,
        label_smoothing=0.0,
        name="masked_sparse_cross_entropy",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(
                f"`label_smoothing` must be in [0, 1), got {label_smoothing}."
            )
        self.pad_id = pad_id
        self.label_smoothing = float(label_smoothing)

    def call(self, y_true, y_pred):
        labels = ops.reshape(ops.cast(y_true, "int32"), (-1,))  # (B T,)
        logits = ops.cast(ops.reshape(y_pred, (-1, ops.shape(y_pred)[-1])), "float32")
        nll = sparse_cross_entropy(labels, logits)  # (B T,)
        if self.label_smoothing:
            # Cross-entropy against the uniform distribution: -mean_v log p_v.
            uniform = ops.logsumexp(logits, axis=-1) - ops.mean(logits, axis=-1)
            nll = (1.0 - self.label_smoothing) * nll + self.label_smoothing * uniform
        pad = device_scalar(self.pad_id, "int32")
        keep = ops.cast(ops.not_equal(labels, pad), "float32")  # (B T,)
        positions = ops.sum(ops.ones_like(keep))  # B T, counted on the device
        weight = positions / ops.maximum(ops.sum(keep), device_scalar(1.0, "float32"))
        return nll * keep * weight  # (B T,): its mean is the mean over real tokens

    def get_config(self):
        return {
            **super().get_config(),
            "pad_id": self.pad_id,
            "label_smoothing": self.label_smoothing,
        }


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over the positions whose label is not `pad_id`.

    A token counts as correct when its logit is the largest (a max, cheaper than
    an argmax; exact ties count as correct).
    """

    def __init__(self, pad_id=0, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.total = self.add_variable((), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        pad = device_scalar(self.pad_id, "int32")
        keep = ops.cast(ops.not_equal(y_true, pad), "float32")
        picked = ops.take_along_axis(y_pred, ops.expand_dims(y_true, -1), axis=-1)
        best = ops.max(y_pred, axis=-1)
        hits = ops.cast(ops.greater_equal(picked[..., 0], best), "float32") * keep
        self.correct.assign_add(ops.sum(hits))
        self.total.assign_add(ops.sum(keep))

    def result(self):
        return ops.divide_no_nan(self.correct, self.total)

    def reset_state(self):
        # Zeros made on the device: `assign(0.0)` would copy from the host.
        self.correct.assign(ops.zeros((), self.correct.dtype))
        self.total.assign(ops.zeros((), self.total.dtype))

    def get_config(self):
        return {**super().get_config(), "pad_id": self.pad_id}
