"""The registry of attention names: every list of names and the one factory.

Every reader of an attention name (the `Translator`, `AttentionDecoder`,
`SequenceSelfAttention`, the models built on it and the recipes' command
lines) takes its list from here, and `score_layer` builds the layer a name
stands for. Adding an attention is one entry here (and its layer class).
"""

from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
from keras_rnnattn.layers.bahdanau_monotonic_attention import (
    BahdanauMonotonicAttention,
)
from keras_rnnattn.layers.luong_attention import SCORES as LUONG_SCORES
from keras_rnnattn.layers.luong_attention import LuongAttention
from keras_rnnattn.layers.luong_monotonic_attention import LuongMonotonicAttention

# The name of no attention (the Translator's fixed source summary; a tagger
# or recipe without self-attention).
NO_ATTENTION = "none"
# Names `AttentionDecoder(attention=...)` builds from its `units` alone.
DECODER_ATTENTIONS = ("bahdanau",) + tuple(
    f"luong_{score}" for score in LUONG_SCORES if score != "location"
)
# Monotonic attention (Raffel et al., 2017), each with its layer class.
MONOTONIC = {
    "bahdanau_monotonic": BahdanauMonotonicAttention,
    "luong_monotonic": LuongMonotonicAttention,
}
# Noise on the scores before the sigmoid in training pushes the monotonic
# choices towards 0 or 1; a negative score bias starts the scan slowly (the
# paper suggests -4 for long memories; words and sentences are short).
MONOTONIC_SIGMOID_NOISE = 1.0
MONOTONIC_SCORE_BIAS_INIT = -1.0
# Names `Translator(attention=...)` takes: the decoder's, Luong's location
# score (which needs the longest source), the monotonic pair, and none.
TRANSLATOR_ATTENTIONS = (
    DECODER_ATTENTIONS + ("luong_location",) + tuple(MONOTONIC) + (NO_ATTENTION,)
)
# Names `SequenceSelfAttention(score=...)` takes (queries and keys are the
# same sequence, so no location score).
SELF_ATTENTION_SCORES = (
    "dot",
    "general",
    "concat",
    "bahdanau",
    "scaled_dot",
    "scaled_general",
)


def score_layer(score, units, source_length=None, **kwargs):
    """Builds the attention layer of a name.

    Args:
        score: `"bahdanau"`, a Luong score `"dot"`, `"general"`, `"concat"`,
            `"location"`, optionally prefixed `"luong_"` and/or `"scaled_"`
            (`"scaled_dot"`: scores divided by sqrt(depth)),
            `"bahdanau_monotonic"` or `"luong_monotonic"` (with score noise
            `MONOTONIC_SIGMOID_NOISE` and score bias
            `MONOTONIC_SCORE_BIAS_INIT` unless `kwargs` set them), or
            `"none"`.
        units: int, the hidden size of the additive scores (Bahdanau, its
            monotonic form and Luong concat); unused by the other scores.
        source_length: int, the longest source; needed by `"location"` only.
        **kwargs: passed to the layer (`dropout`, `seed`, `dtype`, `name`).

    Returns:
        A `BahdanauAttention`, `LuongAttention`, `BahdanauMonotonicAttention`
        or `LuongMonotonicAttention` layer, not built; None for `"none"`.

    Example:

    >>> score_layer("luong_general", units=8).score
    'general'
    >>> type(score_layer("bahdanau_monotonic", units=8)).__name__
    'BahdanauMonotonicAttention'
    """
    if score == NO_ATTENTION:
        return None
    if score in MONOTONIC:
        kwargs.setdefault("sigmoid_noise", MONOTONIC_SIGMOID_NOISE)
        kwargs.setdefault("score_bias_init", MONOTONIC_SCORE_BIAS_INIT)
        if score == "bahdanau_monotonic":
            kwargs["units"] = units
        return MONOTONIC[score](**kwargs)
    name = score.removeprefix("luong_")
    scale = name.startswith("scaled_")
    name = name.removeprefix("scaled_")
    if name == "bahdanau":
        return BahdanauAttention(units, **kwargs)
    return LuongAttention(
        score=name,
        scale=scale,
        units=units if name == "concat" else None,
        source_length=source_length if name == "location" else None,
        **kwargs,
    )
