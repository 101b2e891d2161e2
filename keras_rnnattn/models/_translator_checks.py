"""The checks of the `Translator`'s constructor arguments that span several,
and the upgrade of older saved configs."""

import numbers

from keras_rnnattn.layers.score_layers import NO_ATTENTION


def check_translator_arguments(
    source_tokenizer,
    target_tokenizer,
    attention,
    decoder_layers,
    dropout,
    word_dropout,
    lexical_model,
    share_embeddings,
    share_decoder_embeddings,
    fixnorm,
    scheduled_sampling,
):
    """Raises one `ValueError` naming the fix for arguments that do not fit
    together (or a value out of range); returns nothing."""
    for arg, value in (("dropout", dropout), ("word_dropout", word_dropout)):
        if not 0.0 <= float(value) < 1.0:
            raise ValueError(f"`{arg}` must be in [0, 1). Received: {arg}={value}")
    if decoder_layers > 1 and attention == NO_ATTENTION:
        raise ValueError(
            "A stacked decoder (`decoder_layers` > 1) needs an attention: "
            "its top layer's output is the query. Received: "
            f"decoder_layers={decoder_layers}, attention='none'"
        )
    if lexical_model and attention == NO_ATTENTION:
        raise ValueError(
            "The lexical model averages the source embeddings with the "
            "attention weights: use it with an attention. "
            "Received: lexical_model=True, attention='none'"
        )
    if share_embeddings and (
        source_tokenizer.vocabulary.tokens != target_tokenizer.vocabulary.tokens
    ):
        raise ValueError(
            "`share_embeddings=True` needs one vocabulary for both languages: "
            "pass the same tokenizer (for example one BpeTokenizer fitted on "
            "source and target texts together) as `source_tokenizer` and "
            "`target_tokenizer`. Received vocabularies of "
            f"{source_tokenizer.vocabulary_size} and "
            f"{target_tokenizer.vocabulary_size} tokens that differ."
        )
    if fixnorm is not None and (
        isinstance(fixnorm, bool)
        or not isinstance(fixnorm, numbers.Real)
        or not fixnorm > 0
    ):
        raise ValueError(
            f"`fixnorm` must be a positive number or None. Received: "
            f"fixnorm={fixnorm!r}"
        )
    if fixnorm is not None and share_decoder_embeddings:
        raise ValueError(
            "`fixnorm` fixes the norms of the output Dense layer's weights; "
            "with `share_decoder_embeddings=True` there is none: drop one "
            "of the two."
        )
    if not isinstance(scheduled_sampling, bool):
        raise ValueError(
            "`scheduled_sampling` must be True or False. Received: "
            f"scheduled_sampling={scheduled_sampling!r}"
        )


def upgrade_config(config):
    """A saved Translator config as today's constructor reads it.

    Args:
        config: dict, a `get_config()` result, maybe of an older version.

    Returns:
        A new dict: `attention_layer_size=None`, saved before
        `decoder_layers` existed, meant o_t = [h_t; c_t], now `"concat"`.
    """
    config = dict(config)
    if (
        "decoder_layers" not in config
        and "attention_layer_size" in config
        and config["attention_layer_size"] is None
    ):
        config["attention_layer_size"] = "concat"
    return config
