"""Texts, labels and token ids as the application models read them (NumPy only)."""

import sys
import warnings

import numpy as np


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


def as_text_list(texts, owner, allow_empty=False):
    """A string or a batch of strings as a list of `str`, and whether it was one.

    Args:
        texts: a string (or UTF-8 bytes), or a list, tuple or 1-D array of them.
        owner: the caller, named in errors (`"AttentionClassifier.classify"`).
        allow_empty: bool, whether an empty batch is returned as `[]` rather
            than refused.

    Returns:
        `(items, single)`: the texts as a list of `str`, and whether `texts`
        was one string.

    Example:

    >>> as_text_list(["a b", b"c"], "demo")
    (['a b', 'c'], False)
    >>> as_text_list([], "demo", allow_empty=True)
    ([], False)
    """
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
    if not out and not allow_empty:
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
    tokenizer,
    texts,
    owner,
    max_length=None,
    add_bos=False,
    add_eos=False,
    model=None,
):
    """Token ids of each text, checked: no text may be empty.

    Args:
        model: the model that reads the texts; when texts are cut at
            `max_length`, it warns once per model.

    Returns:
        A list of lists of ints (not padded). A text longer than `max_length`
        tokens is cut to its first `max_length` tokens.
    """
    require_tokenizer(tokenizer, owner)
    encoded = []
    longest = 0
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
        longest = max(longest, len(ids))
        if max_length is not None:
            ids = ids[:max_length]
        encoded.append(ids)
    if max_length is not None and longest > max_length:
        warn_cut(model, owner, longest, max_length)
    return encoded


def warn_cut(model, owner, longest, max_length):
    """Warns, once per model, that texts were cut to `max_length` tokens."""
    if model is not None:
        if getattr(model, "_warned_cut", False):
            return
        object.__setattr__(model, "_warned_cut", True)  # not a Keras attribute
    warnings.warn(
        f"{owner}: texts longer than max_length={max_length} tokens are cut to "
        f"their first {max_length} tokens (the longest has {longest}); the rest "
        "is not read. Build the model with a larger `max_length` (or None) to "
        "read whole texts. This warning is shown once per model.",
        stacklevel=4,
    )


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
    if isinstance(x, tuple) and len(x) in (2, 3):
        ranks = {np.ndim(item) for item in x}
        if len(ranks) > 1 or max(ranks) >= 2:
            raise ValueError(
                f"{owner}: x is a tuple of {len(x)} arrays, an (inputs, targets) "
                "pair: pass them apart, `fit(x, y)`. Received shapes "
                f"{[np.shape(item) for item in x]}"
            )
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


def check_label_batch(y, owner, what="labels"):
    """Refuses labels that are not a batch: one string, one number, a set."""
    if isinstance(y, (str, bytes)):
        raise ValueError(
            f"{owner}: {what} must be a list with one entry per text, not a single "
            f"string: for one text pass [{y!r}]. Received: y={y!r}"
        )
    if isinstance(y, (set, frozenset, dict)) or np.isscalar(y):
        raise ValueError(
            f"{owner}: {what} must be a list or array with one entry per text "
            "(a set or dict has no order, a number is not a batch). "
            f"Received: y of type {type(y).__name__}"
        )


def label_index(labels):
    return {label: i for i, label in enumerate(labels)}


# --- tf.data -----------------------------------------------------------------
DATASET_HELP = (
    "A tf.data.Dataset must yield batches of token ids (batch, length), int, "
    "with their targets: build it from `tokenizer.to_tf_dataset(texts, labels)` "
    "and call `.batch(n)`"
)


def as_dataset(x):
    """`x` if it is a `tf.data.Dataset`, else None (TensorFlow is not imported)."""
    tf = sys.modules.get("tensorflow")
    data = getattr(tf, "data", None)
    if data is not None and isinstance(x, data.Dataset):
        return x
    return None


def dataset_parts(dataset, owner, with_targets):
    """The element spec of a dataset as `(inputs, targets, rest)`.

    `targets` is None for a dataset of inputs alone (`predict`), or where
    `with_targets` is False and the elements are not tuples.
    """
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) in (2, 3):
        return spec[0], spec[1], spec[2:]
    if with_targets:
        raise ValueError(
            f"{owner}: the dataset yields one tensor per element, with no targets. "
            f"{DATASET_HELP}, so that it yields (ids, targets) pairs. "
            f"Received: element_spec={spec}"
        )
    return spec, None, ()


def is_checked_id_dataset(x, owner, with_targets, targets="target ids"):
    """Whether `x` is a `tf.data.Dataset`; if it is, checks that it yields
    batched int ids (and, where it has them, batched int `targets`)."""
    if as_dataset(x) is None:
        return False
    x_spec, y_spec, _ = dataset_parts(x, owner, with_targets)
    check_ids_spec(x_spec, owner)
    if y_spec is not None:
        check_ids_spec(y_spec, owner, what=targets)
    return True


def check_ids_spec(spec, owner, what="token ids"):
    """Checks a dataset's id tensors: int, batched, (batch, length)."""
    import tensorflow as tf

    if not isinstance(spec, tf.TensorSpec):
        raise ValueError(
            f"{owner}: the dataset's {what} must be one tensor. {DATASET_HELP}. "
            f"Received: {spec}"
        )
    if spec.dtype == tf.string:
        raise ValueError(
            f"{owner}: the dataset holds texts; it must hold {what}. Encode them "
            "first: `tokenizer.to_tf_dataset(texts, labels).batch(n)`, or pass "
            f"the texts as a list. Received: {spec}"
        )
    if spec.shape.rank == 1:
        raise ValueError(
            f"{owner}: the dataset is not batched: its {what} have shape "
            f"{tuple(spec.shape)}, one row per element. Call `.batch(n)` on it "
            "(for example `dataset.batch(32)`)."
        )
    if spec.shape.rank != 2 or not (spec.dtype.is_integer or spec.dtype.is_bool):
        raise ValueError(
            f"{owner}: the dataset's {what} must be integer tensors of shape "
            f"(batch, length). {DATASET_HELP}. Received: {spec}"
        )


def map_label_strings(dataset, labels, owner):
    """Maps a dataset's string labels (its second part) to class ids.

    A label outside `labels` stops the iteration with an error naming the set.
    """
    import tensorflow as tf

    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(labels)), tf.range(len(labels), dtype=tf.int64)
        ),
        default_value=-1,
    )
    message = f"{owner}: labels outside the label set {list(labels)}"

    def to_ids(x, y, *rest):
        ids = table.lookup(y)
        check = tf.debugging.assert_non_negative(ids, message=message)
        with tf.control_dependencies([check]):
            ids = tf.cast(ids, tf.int32)
        return (x, ids) + rest

    return dataset.map(to_ids)
