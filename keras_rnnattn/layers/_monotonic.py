"""What the monotonic scorers share, as functions: the choosing probabilities.

`BahdanauMonotonicAttention` and `LuongMonotonicAttention` call these from
their own methods: the score plus a learned scalar bias r becomes a choosing
probability `p = sigmoid(score + r + noise)` (`score + r > 0` in hard mode),
and `ops.monotonic_attention(p, previous_alignment, mode)` the weights; the
state starts with all its mass on the first memory position.
"""

import keras
from keras import ops

from keras_rnnattn.ops import MONOTONIC_MODES, monotonic_attention


def base_kwargs(class_name, kwargs):
    """The base layer's arguments: `probability_fn` is the monotonic one.

    Args:
        class_name: str, the layer's class, named in the error.
        kwargs: dict, the layer's other keyword arguments.

    Returns:
        `kwargs` without `probability_fn` (a ValueError if it is not
        `"softmax"`).
    """
    kwargs = dict(kwargs)
    probability_fn = kwargs.pop("probability_fn", "softmax")
    if probability_fn != "softmax":
        raise ValueError(
            f"{class_name} computes its weights with "
            "`ops.monotonic_attention`: it takes no `probability_fn`. Received: "
            f"probability_fn={probability_fn!r}"
        )
    return kwargs


def monotonic_settings(sigmoid_noise, score_bias_init, mode, seed):
    """The checked monotonic settings and the noise's seed generator.

    Args:
        sigmoid_noise: float >= 0, the pre-sigmoid noise's standard deviation.
        score_bias_init: float, the score bias's initial value.
        mode: one of `MONOTONIC_MODES`.
        seed: optional int, the noise's seed.

    Returns:
        `(sigmoid_noise, score_bias_init, mode, noise_seed_generator)`; the
        generator is None without noise.
    """
    if mode not in MONOTONIC_MODES:
        raise ValueError(
            f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}"
        )
    if float(sigmoid_noise) < 0:
        raise ValueError(
            "`sigmoid_noise` is the standard deviation of the pre-sigmoid "
            f"noise, >= 0. Received: sigmoid_noise={sigmoid_noise}"
        )
    sigmoid_noise = float(sigmoid_noise)
    generator = keras.random.SeedGenerator(seed) if sigmoid_noise > 0 else None
    return sigmoid_noise, float(score_bias_init), mode, generator


def add_score_bias(layer):
    """Adds the scalar score bias r to `layer` (in its `build`).

    Args:
        layer: the monotonic attention layer, with `score_bias_init`.

    Returns:
        The weight, named `score_bias`.
    """
    return layer.add_weight(
        name="score_bias",
        shape=(),
        initializer=keras.initializers.Constant(layer.score_bias_init),
    )


def with_score_bias(scores, score_bias):
    """`scores + r`, r cast to the scores' dtype (a decoder step calls
    `compute_scores` outside `__call__`).

    Args:
        scores: `(B, T, S)`.
        score_bias: the scalar weight r.

    Returns:
        `(B, T, S)`.
    """
    return scores + ops.cast(score_bias, scores.dtype)


def first_position_alignment(batch_size, source_length, dtype="float32"):
    """`(B, S)`: all the mass on the first memory position (tfa's one-hot).

    Args:
        batch_size: int or scalar tensor B.
        source_length: int or scalar tensor S.
        dtype: the result's dtype.

    Returns:
        `(B, S)`, 1 at position 0 and 0 elsewhere.
    """
    first = ops.cast(ops.equal(ops.arange(source_length), 0), dtype)  # (S,)
    return ops.broadcast_to(first, (batch_size, source_length))


def with_sigmoid_noise(noise, shape, training, sigmoid_noise, seed_generator):
    """The base layer's drawn `noise` with the pre-sigmoid noise (`"sigmoid"`).

    Args:
        noise: the base layer's `draw_noise` result (a dict or None).
        shape: the shape of the draw, `(T, B, S)`.
        training: bool, noise in training only.
        sigmoid_noise: float, its standard deviation.
        seed_generator: the layer's `noise_seed_generator`.

    Returns:
        A dict of the draws, or None if there are none.
    """
    noise = noise or {}
    if training and sigmoid_noise > 0:
        noise["sigmoid"] = keras.random.normal(shape, seed=seed_generator)
    return noise or None


def monotonic_weights(
    scores,
    mask,
    previous_alignment,
    training,
    noise,
    sigmoid_noise,
    seed_generator,
    mode,
):
    """`monotonic_attention(p_choose_i, previous_alignment, mode)`, `(B, T, S)`.

    Masked positions get `p_choose_i = 0` (tfa masks their scores with the
    dtype's minimum: sigmoid 0), hence weight exactly 0.

    Args:
        scores: `(B, T, S)`, the biased scores.
        mask: optional bool `(B, S)` or broadcastable.
        previous_alignment: `(B, S)`, the previous step's weights.
        training: bool, whether the noise applies.
        noise: optional dict of draws made before a loop (`"sigmoid"`).
        sigmoid_noise: float, the noise's standard deviation.
        seed_generator: the generator to draw with when `noise` lacks it.
        mode: one of `MONOTONIC_MODES`.

    Returns:
        The weights `(B, T, S)` in the scores' dtype.
    """
    dtype = scores.dtype
    scores = ops.cast(scores, "float32")
    if training and sigmoid_noise > 0:
        if noise is not None and "sigmoid" in noise:  # drawn before the loop
            draw = ops.cast(noise["sigmoid"], "float32")
        else:
            draw = keras.random.normal(ops.shape(scores), seed=seed_generator)
        scores = scores + sigmoid_noise * draw
    if mode == "hard":
        p_choose_i = ops.cast(ops.greater(scores, 0.0), "float32")
    else:
        p_choose_i = ops.sigmoid(scores)
    if mask is not None:
        p_choose_i = ops.where(mask, p_choose_i, ops.zeros_like(p_choose_i))
    previous = ops.expand_dims(ops.cast(previous_alignment, "float32"), 1)
    weights = monotonic_attention(p_choose_i, previous, mode)  # (B, T, S)
    return ops.cast(weights, dtype)


def monotonic_config(config, layer):
    """`config` without `probability_fn` and with `layer`'s monotonic settings.

    Args:
        config: dict, the base layer's config.
        layer: the monotonic attention layer.

    Returns:
        The dict.
    """
    config.pop("probability_fn", None)
    config.update(
        {
            "sigmoid_noise": layer.sigmoid_noise,
            "score_bias_init": layer.score_bias_init,
            "mode": layer.mode,
        }
    )
    return config
