"""Self-attention over the outputs of a sequence model, causal or not."""

import keras
from keras import ops

from keras_rnnattn.layers.score_layers import SELF_ATTENTION_SCORES, score_layer
from keras_rnnattn.ops import causal_mask

SCORE_NAMES = SELF_ATTENTION_SCORES  # the registry's list, under its old name


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class SequenceSelfAttention(keras.layers.Layer):
    """Every position of a sequence attends over the positions of the same sequence.

    For hidden states h_1..h_S (the outputs of an RNN, a 1-D CNN or a Dense layer):

    1. a_ij = softmax_j f(h_i, h_j), f any scorer, over unmasked j (and j <= i when
       `causal=True`: attention over previous hidden states, for generation);
    2. c_i = Σ_j a_ij h_j;
    3. output [h_i; c_i] `(B, S, 2d)` when `concat=True`, else c_i `(B, S, d)`.

    Args:
        score: a score name, `"dot"`, `"general"`, `"concat"`, `"bahdanau"`,
            `"scaled_dot"` or `"scaled_general"`, or a scorer layer instance: a
            `BahdanauAttention`, a `LuongAttention`, or
            `keras.layers.MultiHeadAttention` (its weights are averaged over heads).
        causal: bool, position i attends only to positions j <= i.
        concat: bool, output [h_i; c_i] rather than c_i.
        units: optional int, the hidden size of the `"concat"` and `"bahdanau"`
            scores (default: the input depth).
        dropout: float in [0, 1), dropout on the weights of a named score.
        seed: optional int, the seed of the dropout.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(B, S, d)`.
        mask: optional boolean `(B, S)`; taken from the inputs' Keras mask.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.

    Returns:
        `(B, S, 2d)` (or `(B, S, d)` with `concat=False`), and with
        `return_attention_scores=True` the weights `(B, S, S)`. The input mask is
        passed on.

    Example:

    >>> import numpy as np
    >>> layer = SequenceSelfAttention(score="scaled_dot", causal=True)
    >>> states = np.random.rand(2, 6, 8).astype("float32")
    >>> outputs, weights = layer(states, return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(weights.shape)
    ((2, 6, 16), (2, 6, 6))
    """

    def __init__(
        self,
        score="dot",
        causal=False,
        concat=True,
        units=None,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(score, dict):
            score = keras.saving.deserialize_keras_object(score)
        if isinstance(score, str):
            if score not in SCORE_NAMES:
                raise ValueError(
                    f"`score` must be one of {SCORE_NAMES} or a scorer layer. "
                    f"Received: score={score!r}"
                )
        elif not isinstance(score, keras.layers.Layer):
            raise ValueError(
                "`score` must be a score name or a layer instance (BahdanauAttention, "
                f"LuongAttention, MultiHeadAttention). Received: score={score!r}"
            )
        self.score = score
        self.scorer = None if isinstance(score, str) else score
        self.causal = bool(causal)
        self.concat = bool(concat)
        self.units = units
        self.dropout = float(dropout)
        self.seed = seed
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "SequenceSelfAttention expects inputs of rank 3 (batch, time, "
                f"features). Received: input_shape={tuple(input_shape)}"
            )
        if self.scorer is None:
            self.scorer = score_layer(
                self.score,
                self.units or input_shape[-1],
                dropout=self.dropout,
                seed=self.seed,
                dtype=self.dtype_policy,
                name="scorer",
            )
        if not self.scorer.built:
            self.scorer.build(input_shape, input_shape)
        self.built = True

    def _is_multi_head(self):
        return isinstance(self.scorer, keras.layers.MultiHeadAttention)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        if len(inputs.shape) != 3:
            raise ValueError(
                "SequenceSelfAttention expects inputs of rank 3 (batch, time, "
                f"features). Received: inputs.shape={tuple(inputs.shape)}"
            )
        length = ops.shape(inputs)[1]
        if self._is_multi_head():
            context, weights = self.scorer(
                inputs,
                inputs,
                query_mask=mask,
                value_mask=mask,
                use_causal_mask=self.causal,
                return_attention_scores=True,
                training=training,
            )
            weights = ops.mean(weights, axis=1)  # (B, S, S), averaged over heads
            if mask is not None:
                keep = ops.cast(ops.expand_dims(mask, -1), weights.dtype)  # (B, S, 1)
                weights = weights * keep
                context = context * ops.cast(keep, context.dtype)
        else:
            attention_mask = causal_mask(length, length) if self.causal else None
            context, weights = self.scorer(
                inputs,
                inputs,
                query_mask=mask,
                value_mask=mask,
                attention_mask=attention_mask,
                return_attention_scores=True,
                training=training,
            )  # (B, S, d), (B, S, S)
        outputs = context
        if self.concat:
            outputs = ops.concatenate(
                [ops.cast(inputs, context.dtype), context], axis=-1
            )  # (B, S, 2d)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask

    def _context_depth(self, input_shape):
        if self._is_multi_head() and self.scorer.built:
            return self.scorer.compute_output_shape(input_shape, input_shape)[-1]
        return input_shape[-1]

    def compute_output_shape(self, input_shape):
        depth = self._context_depth(input_shape)
        if self.concat:
            depth = input_shape[-1] + depth
        return tuple(input_shape[:-1]) + (depth,)

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        outputs = keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return outputs
        shape = (inputs.shape[0], inputs.shape[1], inputs.shape[1])
        return outputs, keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        score = self.score
        if not isinstance(score, str):
            score = keras.saving.serialize_keras_object(score)
        config.update(
            {
                "score": score,
                "causal": self.causal,
                "concat": self.concat,
                "units": self.units,
                "dropout": self.dropout,
                "seed": self.seed,
            }
        )
        return config
