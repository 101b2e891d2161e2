"""What the monotonic scorers share: the choosing probabilities and the state."""

import keras
from keras import ops

from keras_rnnattn.ops import MONOTONIC_MODES, monotonic_attention


class MonotonicScorer:
    """Mixin of `BahdanauMonotonicAttention` and `LuongMonotonicAttention`.

    The subclass's score plus a learned scalar bias r becomes a choosing
    probability `p = sigmoid(score + r + noise)` (`score + r > 0` in hard
    mode), and `ops.monotonic_attention(p, previous_alignment, mode)` the
    weights; the state starts with all its mass on the first memory position.
    """

    stateful = True

    @classmethod
    def _base_kwargs(cls, kwargs):
        """The base layer's arguments: `probability_fn` is the monotonic one."""
        kwargs = dict(kwargs)
        probability_fn = kwargs.pop("probability_fn", "softmax")
        if probability_fn != "softmax":
            raise ValueError(
                f"{cls.__name__} computes its weights with "
                "`ops.monotonic_attention`: it takes no `probability_fn`. Received: "
                f"probability_fn={probability_fn!r}"
            )
        return kwargs

    def _init_monotonic(self, sigmoid_noise, score_bias_init, mode, seed):
        if mode not in MONOTONIC_MODES:
            raise ValueError(
                f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}"
            )
        if float(sigmoid_noise) < 0:
            raise ValueError(
                "`sigmoid_noise` is the standard deviation of the pre-sigmoid "
                f"noise, >= 0. Received: sigmoid_noise={sigmoid_noise}"
            )
        self.sigmoid_noise = float(sigmoid_noise)
        self.score_bias_init = float(score_bias_init)
        self.mode = mode
        self.noise_seed_generator = (
            keras.random.SeedGenerator(seed) if self.sigmoid_noise > 0 else None
        )

    def _build_score_bias(self):
        self.score_bias = self.add_weight(
            name="score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    def _add_score_bias(self, scores):
        # Cast: a decoder step calls `compute_scores` outside `__call__`.
        return scores + ops.cast(self.score_bias, scores.dtype)

    def initial_alignment(self, batch_size, source_length, dtype="float32"):
        """`(B, S)`: all the mass on the first memory position (tfa's one-hot)."""
        first = ops.cast(ops.equal(ops.arange(source_length), 0), dtype)  # (S,)
        return ops.broadcast_to(first, (batch_size, source_length))

    def draw_noise(self, shape, training=None):
        """`BaseAttention.draw_noise`, with the pre-sigmoid noise (`"sigmoid"`)."""
        noise = super().draw_noise(shape, training) or {}
        if training and self.sigmoid_noise > 0:
            noise["sigmoid"] = keras.random.normal(
                shape, seed=self.noise_seed_generator
            )
        return noise or None

    def compute_weights(
        self, scores, mask=None, previous_alignment=None, training=None, noise=None
    ):
        """`monotonic_attention(p_choose_i, previous_alignment, mode)`, `(B, T, S)`.

        Masked positions get `p_choose_i = 0` (tfa masks their scores with
        the dtype's minimum: sigmoid 0), hence weight exactly 0.
        """
        dtype = scores.dtype
        scores = ops.cast(scores, "float32")
        if training and self.sigmoid_noise > 0:
            if noise is not None and "sigmoid" in noise:  # drawn before the loop
                draw = ops.cast(noise["sigmoid"], "float32")
            else:
                draw = keras.random.normal(
                    ops.shape(scores), seed=self.noise_seed_generator
                )
            scores = scores + self.sigmoid_noise * draw
        if self.mode == "hard":
            p_choose_i = ops.cast(ops.greater(scores, 0.0), "float32")
        else:
            p_choose_i = ops.sigmoid(scores)
        if mask is not None:
            p_choose_i = ops.where(mask, p_choose_i, ops.zeros_like(p_choose_i))
        previous = ops.expand_dims(ops.cast(previous_alignment, "float32"), 1)
        weights = monotonic_attention(p_choose_i, previous, self.mode)  # (B, T, S)
        return ops.cast(weights, dtype)

    def _monotonic_config(self, config):
        config.pop("probability_fn", None)
        config.update(
            {
                "sigmoid_noise": self.sigmoid_noise,
                "score_bias_init": self.score_bias_init,
                "mode": self.mode,
            }
        )
        return config
