"""The attention layer that a score name stands for (one factory for every user)."""

from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
from keras_rnnattn.layers.luong_attention import LuongAttention


def score_layer(score, units, source_length=None, **kwargs):
    """Builds the attention layer of a score name.

    Args:
        score: `"bahdanau"`, or a Luong score `"dot"`, `"general"`, `"concat"`,
            `"location"`, optionally prefixed `"luong_"` and/or `"scaled_"`
            (`"scaled_dot"`: scores divided by sqrt(depth)).
        units: int, the hidden size of the additive scores (Bahdanau and
            Luong concat); unused by the other scores.
        source_length: int, the longest source; needed by `"location"` only.
        **kwargs: passed to the layer (`dropout`, `seed`, `dtype`, `name`).

    Returns:
        A `BahdanauAttention` or `LuongAttention` layer, not built.

    Example:

    >>> score_layer("luong_general", units=8).score
    'general'
    """
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
