"""Tokenizers in a model's config: plain JSON data and back."""

import importlib


def serialize_tokenizer(tokenizer):
    """A tokenizer as plain JSON-able data: `{"class_name", "config"}`, or None."""
    if tokenizer is None or isinstance(tokenizer, dict):
        return tokenizer
    return {"class_name": type(tokenizer).__name__, "config": tokenizer.get_config()}


def deserialize_tokenizer(tokenizer):
    """Rebuilds a tokenizer from `serialize_tokenizer`'s data (or passes one
    through, a keras-hub tokenizer wrapped by `wrap_tokenizer`).

    Only tokenizer classes of `keras_rnnattn.text`, or classes registered with
    `keras.saving.register_keras_serializable`, are accepted: a config never
    names arbitrary code to import. A config that does not rebuild a working
    tokenizer (another class, missing or wrong fields) raises a ValueError.
    """
    if tokenizer is None or not isinstance(tokenizer, dict):
        return wrap_tokenizer(tokenizer)
    name = tokenizer.get("class_name")
    cls = None
    if isinstance(name, str):
        text = importlib.import_module("keras_rnnattn.text")
        cls = getattr(text, name, None)
        if not (isinstance(cls, type) and issubclass(cls, text.Tokenizer)):
            cls = None
        if cls is text.Tokenizer:  # the abstract base: it cannot split text
            cls = None
        if cls is None:
            import keras  # only here: the tokenizers themselves need no Keras

            cls = keras.saving.get_registered_object(name)
    if not isinstance(cls, type) or not hasattr(cls, "from_config"):
        raise ValueError(
            "Unknown tokenizer class: it must be a tokenizer class of "
            "keras_rnnattn.text or one registered with "
            f"keras.saving.register_keras_serializable. Received: class_name={name!r}"
        )
    try:
        result = cls.from_config(tokenizer.get("config"))
    except (TypeError, KeyError, AttributeError) as error:
        raise ValueError(
            f"The tokenizer config does not rebuild a {name} ({error}): the config "
            "is damaged or was edited; save the model again. "
            f"Received: class_name={name!r}"
        ) from None
    missing = [
        attribute
        for attribute in ("encode", "decode", "tokenize", "get_config", "pad_id")
        if not hasattr(result, attribute)
    ]
    if missing:
        raise ValueError(
            f"{name} is not a tokenizer: it has no {', '.join(missing)}. "
            f"Received: class_name={name!r}"
        )
    return result


def wrap_tokenizer(tokenizer):
    """`tokenizer` itself, or a `KerasHubTokenizer` around a keras-hub tokenizer.

    The one place where the models accept tokenizers of other libraries: an
    object with keras-hub's protocol (`tokenize`, `detokenize`,
    `vocabulary_size()`, `token_to_id`, `id_to_token`) is wrapped, anything
    else is returned as it is.

    Example:

    >>> from keras_rnnattn.text import CharTokenizer
    >>> tok = CharTokenizer().fit(["ab"])
    >>> wrap_tokenizer(tok) is tok
    True
    """
    from keras_rnnattn.text.keras_hub_tokenizer import (
        KerasHubTokenizer,
        is_hub_tokenizer,
    )

    if is_hub_tokenizer(tokenizer):
        return KerasHubTokenizer(tokenizer)
    return tokenizer


def as_tokenizer(tokenizer, name):
    """A fitted tokenizer, rebuilt from its serialized form where it is one.

    Args:
        tokenizer: a `keras_rnnattn.text` tokenizer, a keras-hub tokenizer
            (wrapped in `KerasHubTokenizer`) or `serialize_tokenizer`'s data.
        name: the argument's name, for the error message.

    Returns:
        The tokenizer.

    Example:

    >>> from keras_rnnattn.text import CharTokenizer
    >>> tok = CharTokenizer().fit(["ab"])
    >>> as_tokenizer(serialize_tokenizer(tok), "tokenizer").encode("ba")
    [5, 4]
    """
    tokenizer = deserialize_tokenizer(tokenizer)
    for attribute in ("encode", "decode", "get_config", "vocabulary_size"):
        if not hasattr(tokenizer, attribute):
            raise ValueError(
                f"`{name}` must be a fitted tokenizer of keras_rnnattn.text (or its "
                f"config) or of keras-hub. Received: {name}={tokenizer!r}"
            )
    tokenizer.vocabulary_size  # noqa: B018 (raises if the tokenizer is not fitted)
    return tokenizer
