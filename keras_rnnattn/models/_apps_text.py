"""Text, label and token-id handling shared by the application models."""

import importlib

import keras
import numpy as np


def serialize_tokenizer(tokenizer):
    """A tokenizer as plain JSON-able data: `{"class_name", "config"}`, or None."""
    if tokenizer is None or isinstance(tokenizer, dict):
        return tokenizer
    return {"class_name": type(tokenizer).__name__, "config": tokenizer.get_config()}


def deserialize_tokenizer(tokenizer):
    """Rebuilds a tokenizer from `serialize_tokenizer`'s data (or passes one through).

    Only tokenizer classes of `keras_rnnattn.text`, or classes registered with
    `keras.saving.register_keras_serializable`, are accepted: a config never
    names arbitrary code to import. A config that does not rebuild a working
    tokenizer (another class, missing or wrong fields) raises a ValueError.
    """
    if tokenizer is None or not isinstance(tokenizer, dict):
        return tokenizer
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


def is_text(x):
    """Whether `x` is a string or a batch of strings (list, tuple or array)."""
    if isinstance(x, str):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in ("U", "S", "O") and x.size > 0 and _all_str(x.flat)
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and _all_str(x)
    return False


def _all_str(items):
    return all(isinstance(item, (str, bytes)) for item in items)


def as_text_list(texts, owner):
    """A string or a batch of strings as a list of `str`, and whether it was one."""
    single = isinstance(texts, (str, bytes))
    items = [texts] if single else list(np.asarray(texts, dtype=object).ravel())
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise ValueError(
            f"{owner}: texts must be a string or a 1-D batch of strings. "
            f"Received an array of shape {texts.shape}"
        )
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bytes):
            try:
                item = item.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{owner}: texts given as bytes must be UTF-8 ({error}): decode "
                    f"them yourself or pass str. Received: texts[{i}]={item[:80]!r}"
                ) from None
        if not isinstance(item, str):
            raise ValueError(
                f"{owner}: texts must be strings. Received: texts[{i}]={item!r}"
            )
        out.append(item)
    if not out:
        raise ValueError(f"{owner}: received an empty batch of texts (no strings).")
    return out, single


def require_tokenizer(tokenizer, owner):
    if tokenizer is None:
        raise ValueError(
            f"{owner} was built without a tokenizer, so it cannot read strings. "
            "Pass token ids, or build it with `tokenizer=` (a keras_rnnattn.text "
            "tokenizer fitted on your texts)."
        )
    return tokenizer


def encode_texts(
    tokenizer, texts, owner, max_length=None, add_bos=False, add_eos=False
):
    """Token ids of each text, checked: no text may be empty.

    Returns:
        A list of lists of ints (not padded). A text longer than `max_length`
        tokens is cut to its first `max_length` tokens.
    """
    require_tokenizer(tokenizer, owner)
    encoded = []
    for i, text in enumerate(texts):
        ids = [int(t) for t in tokenizer.encode(text)]
        if not ids:
            raise ValueError(
                f"{owner}: texts[{i}] has no tokens, so there is nothing to read. "
                f"Received: texts[{i}]={text!r}"
            )
        if add_bos:
            ids = [int(tokenizer.bos_id)] + ids
        if add_eos:
            ids = ids + [int(tokenizer.eos_id)]
        if max_length is not None:
            ids = ids[:max_length]
        encoded.append(ids)
    return encoded


def pad(sequences, pad_id=0, length=None, dtype="int32"):
    """Pads lists of ids at the end to one length (the longest by default)."""
    length = length or max(len(s) for s in sequences)
    out = np.full((len(sequences), length), pad_id, dtype=dtype)
    for i, s in enumerate(sequences):
        out[i, : len(s)] = s[:length]
    return out


def token_strings(tokenizer, text, ids):
    """The token strings of `text`, one per id (for explanations and tags).

    An unknown word keeps its own spelling here, though its id is the unk id.
    """
    tokens = list(tokenizer.tokenize(text))
    if len(tokens) >= len(ids):
        return tokens[: len(ids)]
    return [tokenizer.decode([i]) for i in ids]


def check_token_ids(x, vocabulary_size, owner):
    """Checks a NumPy batch of token ids: integers in `[0, vocabulary_size)`."""
    if x is None:
        raise ValueError(
            f"{owner}: received no inputs (x=None). Pass texts, token ids "
            "(batch, length) or a tf.data.Dataset."
        )
    if not isinstance(x, (np.ndarray, list, tuple)):
        return x
    array = np.asarray(x)
    if array.size == 0:
        raise ValueError(f"{owner}: received an empty batch of token ids.")
    if array.dtype.kind not in ("i", "u"):
        if array.dtype.kind == "f" and np.all(array == np.round(array)):
            array = array.astype("int32")
        else:
            raise ValueError(
                f"{owner}: token ids must be integers (or pass strings). "
                f"Received an array of dtype {array.dtype}"
            )
    if array.ndim != 2:
        raise ValueError(
            f"{owner}: token ids must have shape (batch, length). "
            f"Received shape {array.shape}"
        )
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocabulary_size:
        raise ValueError(
            f"{owner}: token ids must lie in [0, {vocabulary_size}) (the "
            f"vocabulary size). Received ids from {low} to {high}"
        )
    return array.astype("int32")


def label_index(labels):
    return {label: i for i, label in enumerate(labels)}
