"""Monotonic attention of Raffel et al. (2017) with Luong's multiplicative score."""

import keras
from keras import ops

from keras_rnnattn.layers._monotonic import (
    add_score_bias,
    base_kwargs,
    first_position_alignment,
    monotonic_config,
    monotonic_settings,
    monotonic_weights,
    with_score_bias,
    with_sigmoid_noise,
)
from keras_rnnattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class LuongMonotonicAttention(BaseAttention):
    """Monotonic attention with Luong's "general" score (tfa's `LuongMonotonicAttention`).

    Raffel, Luong, Liu, Weiss and Eck, "Online and Linear-Time Attention by
    Enforcing Monotonic Alignments" (ICML 2017). At each decoder step the
    attention scans the memory left to right from where it stopped at the
    previous step and stops at position j with probability p_j; it never goes
    back. For a query q (the decoder's current state) and keys k:

    1. score_j = g · qᵀ W k_j + r: Luong's "general" score (W maps the keys to
       the query's depth), times a learned scalar g (initialised to 1) with
       `scale=True`, plus a learned scalar bias r initialised to
       `score_bias_init`;
    2. p_j = sigmoid(score_j + ε), ε ~ N(0, `sigmoid_noise`²) during training
       only; in `"hard"` mode p_j = [score_j + ε > 0];
    3. weights = `ops.monotonic_attention(p, previous_alignment, mode)`; a
       row's weights sum to at most 1;
    4. padded memory positions get p_j = 0, hence weight exactly 0.

    `scale` follows tfa's `LuongMonotonicAttention(scale=True)`: a learned
    scalar g on the score, so that tfa's weights port as they are. It is not
    `LuongAttention(scale=True)`'s fixed 1/sqrt(depth).

    The alignment state starts with all its mass on the first memory position
    and becomes each step's weights. `AttentionDecoder` carries it; one call
    attends one decoder step. In `"hard"` mode a step reads only the memory at
    or after the previous step's position: decoding can run online. Train with
    `mode="parallel"` (and `sigmoid_noise` > 0), decode with `mode="hard"`: the
    weights are the same, only the mode changes.

    Weights port from tfa's mechanism: `memory_layer` → `key_dense`,
    `attention_g` → `g`, `attention_score_bias` → `score_bias`
    (`keras_rnnattn.integrations.tfa.set_tfa_weights`).

    Args:
        scale: bool, multiply the score by a learned scalar g (tfa's).
        sigmoid_noise: float >= 0, the standard deviation of the Gaussian noise
            added to the scores before the sigmoid, in training only (inside
            `AttentionDecoder`'s training loop, drawn for all steps before the
            loop: `draw_noise`).
        score_bias_init: float, the initial value of the score bias r; the paper
            recommends a negative value (for example -4) for long memories.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`: how
            `ops.monotonic_attention` computes the weights.
        seed: optional int, the seed of the noise (and of the dropout).
        units: int, the query depth W projects the keys to (tfa's `units`);
            with it `precompute_keys` works before the first call. Default
            None: the query's depth, read at the first call.
        **kwargs: `dropout` and the base layer arguments.

    Call arguments:
        query: one decoder step `(B, dq)` (or `(B, 1, dq)`).
        value: `(B, S, dv)`.
        key: optional `(B, S, dk)`, defaults to `value`.
        value_mask: optional boolean `(B, S)`.
        return_attention_scores: bool, also return the weights.
        training: bool, whether the noise (and dropout) is applied.
        processed_key: optional `precompute_keys(key)`, `(B, S, dq)`.
        previous_alignment: `(B, S)`, the previous step's weights (default:
            `initial_alignment`, all mass on the first position).

    Returns:
        The context `(B, dv)` (or `(B, 1, dv)`), and with
        `return_attention_scores=True` the weights `(B, S)` (or `(B, 1, S)`).

    Example:

    >>> import numpy as np
    >>> layer = LuongMonotonicAttention(scale=True, units=8)
    >>> query = np.random.rand(2, 8).astype("float32")  # one decoder step
    >>> memory = np.random.rand(2, 5, 6).astype("float32")
    >>> mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    >>> context, weights = layer(
    ...     query, memory, value_mask=mask, return_attention_scores=True
    ... )
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 6), (2, 5))
    >>> keras.ops.convert_to_numpy(weights)[1, 3:]  # padding: exactly 0
    array([0., 0.], dtype=float32)
    >>> bool(np.all(keras.ops.convert_to_numpy(weights).sum(-1) <= 1 + 1e-6))
    True
    """

    stateful = True

    def __init__(
        self,
        scale=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="parallel",
        seed=None,
        units=None,
        **kwargs,
    ):
        super().__init__(seed=seed, **base_kwargs(type(self).__name__, kwargs))
        if units is not None and (not isinstance(units, int) or units < 1):
            raise ValueError(
                f"`units` must be a positive int or None. Received: units={units!r}"
            )
        (
            self.sigmoid_noise,
            self.score_bias_init,
            self.mode,
            self.noise_seed_generator,
        ) = monotonic_settings(sigmoid_noise, score_bias_init, mode, seed)
        self.scale = bool(scale)
        self.units = units
        self.key_dense = None
        if units is not None:
            self.key_dense = self._key_dense(units)

    def _key_dense(self, units):
        return keras.layers.Dense(
            units, use_bias=False, dtype=self.dtype_policy, name="key_dense"
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        dq = query_shape[-1]
        if self.units and dq is not None and dq != self.units:
            raise ValueError(
                f"{self.__class__.__name__} with units={self.units} projects the "
                f"keys to a query depth of {self.units}. Received: query depth {dq}"
            )
        if self.key_dense is None:
            self.key_dense = self._key_dense(dq)  # W k, to dq
        if not self.key_dense.built:
            self.key_dense.build(key_shape)
        if self.scale:
            self.g = self.add_weight(name="g", shape=(), initializer="ones")
        self.score_bias = add_score_bias(self)
        self.built = True

    def precompute_keys(self, key):
        """W k, `(B, S, dq)`: computed once per source sentence.

        Before the layer's first call it needs `units` (the query depth) to
        build W from `key.shape`.
        """
        if self.key_dense is None:
            raise ValueError(
                f"{self.__class__.__name__} projects the keys to the query's "
                "depth, which `precompute_keys` cannot see before the layer is "
                "built: pass `units` (the query depth), call "
                "`layer.build(query_shape, value_shape)` first, or call the layer "
                f"once. Received: key.shape={tuple(key.shape)}"
            )
        self._saw_key(key)
        return self.key_dense(key)  # (B, S, dq)

    def initial_alignment(self, batch_size, source_length, dtype="float32"):
        """`(B, S)`: all the mass on the first memory position (tfa's one-hot)."""
        return first_position_alignment(batch_size, source_length, dtype)

    def draw_noise(self, shape, training=None):
        """`BaseAttention.draw_noise`, with the pre-sigmoid noise (`"sigmoid"`)."""
        return with_sigmoid_noise(
            super().draw_noise(shape, training),
            shape,
            training,
            self.sigmoid_noise,
            self.noise_seed_generator,
        )

    def compute_weights(
        self, scores, mask=None, previous_alignment=None, training=None, noise=None
    ):
        """`monotonic_attention(p_choose_i, previous_alignment, mode)`, `(B, T, S)`
        (masked positions get weight exactly 0)."""
        return monotonic_weights(
            scores,
            mask,
            previous_alignment,
            training,
            noise,
            self.sigmoid_noise,
            self.noise_seed_generator,
            self.mode,
        )

    def compute_scores(self, query, processed_key, previous_alignment=None):
        scores = ops.matmul(query, ops.transpose(processed_key, (0, 2, 1)))  # (B, T, S)
        if self.scale:
            scores = ops.cast(self.g, scores.dtype) * scores
        return with_score_bias(scores, self.score_bias)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale, "units": self.units})
        return monotonic_config(config, self)
