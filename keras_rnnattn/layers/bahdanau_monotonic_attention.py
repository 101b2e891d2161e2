"""Monotonic attention of Raffel et al. (2017) with Bahdanau's additive score."""

import keras

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
from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention


@keras.saving.register_keras_serializable(package="keras_rnnattn")
class BahdanauMonotonicAttention(BahdanauAttention):
    """Monotonic attention with an additive score (tfa's `BahdanauMonotonicAttention`).

    Raffel, Luong, Liu, Weiss and Eck, "Online and Linear-Time Attention by
    Enforcing Monotonic Alignments" (ICML 2017). At each decoder step the
    attention scans the memory left to right from where it stopped at the
    previous step and stops at position j with probability p_j; it never goes
    back. For a query q (the decoder's current state) and keys k:

    1. score_j = vᵀ tanh(W_q q + W_k k_j + b) + r: `BahdanauAttention`'s score
       (weight-normalised with `normalize=True`) plus a learned scalar bias r,
       initialised to `score_bias_init`;
    2. p_j = sigmoid(score_j + ε), ε ~ N(0, `sigmoid_noise`²) during training
       only (the noise pushes the model towards discrete decisions); in
       `"hard"` mode p_j = [score_j + ε > 0];
    3. weights = `ops.monotonic_attention(p, previous_alignment, mode)`: the
       expected attention under the scan (`"parallel"`, `"recursive"`) or its
       hard, one-hot decision (`"hard"`); a row's weights sum to at most 1;
    4. padded memory positions get p_j = 0, hence weight exactly 0.

    The alignment state starts with all its mass on the first memory position
    and becomes each step's weights (tfa's `initial_alignments` and
    `next_state`). `AttentionDecoder` carries it; one call attends one decoder
    step. In `"hard"` mode a step reads only the memory at or after the
    previous step's position: decoding can run online, as the memory arrives.
    The usual recipe (the paper's) trains with `mode="parallel"` and
    `sigmoid_noise` > 0 and decodes with `mode="hard"`: the weights are the
    same layer's, only the mode changes (for example
    `BahdanauMonotonicAttention.from_config({**layer.get_config(), "mode":
    "hard"})` and `set_weights`).

    Weights port from tfa's mechanism: `memory_layer` → `key_dense`,
    `query_layer` → `query_dense`, `attention_v` → `v`, `attention_g` → `g`,
    `attention_b` → `b` (0 without `normalize`), `attention_score_bias` →
    `score_bias` (`keras_rnnattn.integrations.tfa.set_tfa_weights`).

    Args:
        units: int, the size of the hidden layer of the scoring network.
        normalize: bool, use the weight-normalised score (g · v / ‖v‖ and the
            bias b inside the tanh, as tfa's).
        sigmoid_noise: float >= 0, the standard deviation of the Gaussian noise
            added to the scores before the sigmoid, in training only (inside
            `AttentionDecoder`'s training loop, drawn for all steps before the
            loop: `draw_noise`).
        score_bias_init: float, the initial value of the score bias r; the paper
            recommends a negative value (for example -4) for long memories.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`: how
            `ops.monotonic_attention` computes the weights.
        seed: optional int, the seed of the noise (and of the dropout).
        **kwargs: `BahdanauAttention`'s `dropout` and the base layer arguments.

    Call arguments:
        query: one decoder step `(B, dq)` (or `(B, 1, dq)`).
        value: `(B, S, dv)`.
        key: optional `(B, S, dk)`, defaults to `value`.
        value_mask: optional boolean `(B, S)`.
        return_attention_scores: bool, also return the weights.
        training: bool, whether the noise (and dropout) is applied.
        processed_key: optional `precompute_keys(key)`, `(B, S, units)`.
        previous_alignment: `(B, S)`, the previous step's weights (default:
            `initial_alignment`, all mass on the first position).

    Returns:
        The context `(B, dv)` (or `(B, 1, dv)`), and with
        `return_attention_scores=True` the weights `(B, S)` (or `(B, 1, S)`).

    Example:

    >>> import numpy as np
    >>> layer = BahdanauMonotonicAttention(units=8, mode="hard")
    >>> query = np.random.rand(2, 16).astype("float32")  # one decoder step
    >>> memory = np.random.rand(2, 5, 12).astype("float32")
    >>> context, weights = layer(query, memory, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 12), (2, 5))
    >>> state = layer.initial_alignment(2, 5)  # the first step reads this
    >>> keras.ops.convert_to_numpy(state)[0]
    array([1., 0., 0., 0., 0.], dtype=float32)
    >>> weights = keras.ops.convert_to_numpy(weights)  # one-hot or all zero
    >>> bool(np.all((weights == 0) | (weights == 1)))
    True
    """

    stateful = True

    def __init__(
        self,
        units,
        normalize=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="parallel",
        seed=None,
        **kwargs,
    ):
        super().__init__(
            units,
            normalize=normalize,
            seed=seed,
            **base_kwargs(type(self).__name__, kwargs),
        )
        (
            self.sigmoid_noise,
            self.score_bias_init,
            self.mode,
            self.noise_seed_generator,
        ) = monotonic_settings(sigmoid_noise, score_bias_init, mode, seed)

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        self.score_bias = add_score_bias(self)
        self.built = True

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
        scores = super().compute_scores(query, processed_key)  # (B, T, S)
        return with_score_bias(scores, self.score_bias)

    def get_config(self):
        return monotonic_config(super().get_config(), self)
