"""A keras-hub tokenizer behind the `keras_rnnattn.text` tokenizer interface."""

import base64
import os
import tempfile

import numpy as np

from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary

HUB_METHODS = (
    "tokenize",
    "detokenize",
    "vocabulary_size",
    "token_to_id",
    "id_to_token",
)
INSTALL_HINT = 'pip install ".[hub]"'
_ROLES = ("pad", "unk", "bos", "eos")
# keras-hub's attribute and the usual spellings of each special token.
_FIND = {
    "pad": ("pad_token_id", ("<pad>", "[PAD]", "<|pad|>")),
    "unk": ("unk_token_id", ("<unk>", "[UNK]", "<|unk|>")),
    "bos": ("start_token_id", ("<bos>", "<s>", "[CLS]", "<|startoftext|>")),
    "eos": ("end_token_id", ("<eos>", "</s>", "[SEP]", "<|endoftext|>")),
}


def is_hub_tokenizer(obj):
    """Whether `obj` follows keras-hub's tokenizer protocol (`vocabulary_size()`
    a method, `tokenize`, `detokenize`, `token_to_id`, `id_to_token`)."""
    if isinstance(obj, (Tokenizer, dict, type)) or obj is None:
        return False
    return all(callable(getattr(obj, name, None)) for name in HUB_METHODS)


def _import_keras_hub():
    try:
        import keras_hub
    except ImportError:
        raise ImportError(
            "Loading a KerasHubTokenizer needs the `keras-hub` package, which is "
            f"not installed: {INSTALL_HINT}."
        ) from None
    return keras_hub


def _as_list(values):
    """A keras-hub output (array, tensor, ragged tensor or list) as a list."""
    if hasattr(values, "to_list"):  # tf.RaggedTensor
        return values.to_list()
    if hasattr(values, "numpy"):
        values = values.numpy()
    if isinstance(values, np.ndarray):
        return values.tolist()
    return list(values)


def _as_str(text):
    if hasattr(text, "numpy"):
        text = text.numpy()
    if isinstance(text, np.ndarray):
        text = text.item()
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return str(text)


class _MappedVocabulary(Vocabulary):
    """A `Vocabulary` over the adapter's ids: `tokens` in id order, `ids` the id
    of each spelling (a wrapped tokenizer may spell two ids alike, which
    `Vocabulary`'s constructor refuses, so it is not called)."""

    def __init__(self, tokens, special_tokens, ids):
        self.tokens = tokens
        self.special_tokens = special_tokens
        self._ids = ids


class KerasHubTokenizer(Tokenizer):
    """Any keras-hub tokenizer, used by the models as a `keras_rnnattn.text` one.

    The models wrap a keras-hub tokenizer (any object with `tokenize`,
    `detokenize`, `vocabulary_size()`, `token_to_id` and `id_to_token`, such as
    `keras_hub.tokenizers.SentencePieceTokenizer` or `BytePairTokenizer`) in
    this class themselves: `AttentionClassifier(tokenizer=hub_tokenizer)`.

    Ids. The models read pad 0, unk 1, bos 2 and eos 3. A tokenizer that has
    exactly those ids (a SentencePiece model trained by
    `SentencePieceTokenizer.fit`, for one) keeps all its ids. Any other is
    shifted: its special tokens take ids 0 to 3 and every other id `i` becomes
    `i + 4` (`vocabulary_size` is then the wrapped one's plus 4); a special
    token it lacks (SentencePiece's default models have no pad) gets its id
    here all the same. The wrapped tokenizer's special ids are its
    `pad_token_id`, `unk_token_id`, `start_token_id` and `end_token_id` where
    it has them, else the ids of the usual spellings (`"<pad>"`, `"<unk>"`,
    `"<s>"`/`"<bos>"`, `"</s>"`/`"<eos>"`, `"[PAD]"`, ...), or `special_ids`.

    Saving. `get_config` holds the wrapped tokenizer's Keras config and its
    asset files (a SentencePiece model, a BPE vocabulary) in base64, so a
    model's `config.json` and `.keras` file are complete. Loading rebuilds it
    with Keras in safe mode, only for a class registered by keras-hub (or with
    `keras.saving.register_keras_serializable`); it needs keras-hub installed:
    `pip install ".[hub]"`. Exported TFLite files read without
    TensorFlow need a `SentencePieceTokenizer` instead (keras-hub imports
    TensorFlow).

    Args:
        tokenizer: a keras-hub tokenizer, or its config as `get_config` holds
            it (`{"tokenizer": ..., "assets": ...}` is read by `from_config`).
        special_ids: optional dict `{"pad", "unk", "bos", "eos": id or None}`,
            the wrapped tokenizer's ids of those tokens, where they are not
            found as described above.

    Example:

    >>> import io, sentencepiece as spm, keras_hub
    >>> model = io.BytesIO()
    >>> spm.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(["the cat sat", "the dog ran"] * 5),
    ...     model_writer=model, vocab_size=16, minloglevel=2)
    >>> hub = keras_hub.tokenizers.SentencePieceTokenizer(proto=model.getvalue())
    >>> tok = KerasHubTokenizer(hub)  # unk 0, bos 1, eos 2, no pad: shifted
    >>> tok.special_ids
    {'pad': None, 'unk': 0, 'bos': 1, 'eos': 2}
    >>> [i - 4 for i in tok.encode("the cat")] == hub.tokenize("the cat").tolist()
    True
    >>> tok.decode(tok.encode("the cat", add_eos=True) + [0, 0])
    'the cat'
    """

    def __init__(self, tokenizer, special_ids=None):
        super().__init__()
        if not is_hub_tokenizer(tokenizer):
            raise ValueError(
                "`tokenizer` must follow keras-hub's tokenizer protocol (methods "
                f"{', '.join(HUB_METHODS)}), such as a keras_hub.tokenizers "
                f"tokenizer. Received: tokenizer={tokenizer!r}"
            )
        self.tokenizer = tokenizer
        size = int(tokenizer.vocabulary_size())
        found = self._find_special_ids(tokenizer, size, special_ids or {})
        self.special_ids = found
        hub_ids = tuple(found[role] for role in _ROLES)
        self.offset = 0 if hub_ids == (0, 1, 2, 3) else 4
        self._to_project = {i: k for k, i in enumerate(hub_ids) if i is not None}
        self._to_hub = dict(enumerate(hub_ids))
        self._build_vocabulary(size)

    @staticmethod
    def _find_special_ids(tokenizer, size, given):
        unknown = set(given) - set(_ROLES)
        if unknown:
            raise ValueError(
                f"`special_ids` takes the keys {_ROLES}. Received: {sorted(unknown)}"
            )
        found = {}
        for role in _ROLES:
            if role in given:
                value = given[role]
            else:
                attribute, spellings = _FIND[role]
                value = getattr(tokenizer, attribute, None)
                for spelling in () if value is not None else spellings:
                    token_id = int(tokenizer.token_to_id(spelling))
                    if 0 <= token_id < size and tokenizer.id_to_token(token_id) == (
                        spelling
                    ):
                        value = token_id
                        break
            if value is not None and not (
                isinstance(value, (int, np.integer)) and 0 <= value < size
            ):
                raise ValueError(
                    f"The {role} id must be None or an int in [0, {size}). "
                    f"Received: {role} id {value!r}"
                )
            found[role] = None if value is None else int(value)
        ids = [i for i in found.values() if i is not None]
        if len(set(ids)) != len(ids):
            raise ValueError(
                "The pad, unk, bos and eos ids must differ: pass `special_ids`. "
                f"Received: {found}"
            )
        return found

    def _build_vocabulary(self, size):
        hub_tokens = [_as_str(self.tokenizer.id_to_token(i)) for i in range(size)]
        specials = tuple(
            SPECIAL_TOKENS[k] if i is None else hub_tokens[i]
            for k, i in enumerate(self._to_hub.values())
        )
        tokens = list(specials) + hub_tokens if self.offset else hub_tokens
        ids = {}
        for token_id, token in enumerate(tokens):
            ids.setdefault(token, token_id)
        self.special_tokens = specials
        self.vocabulary = _MappedVocabulary(tokens, specials, ids)

    # Ids.
    def _project_id(self, hub_id):
        special = self._to_project.get(hub_id)
        return special if special is not None else hub_id + self.offset

    def _hub_id(self, token_id):
        if token_id < 4:
            return self._to_hub[token_id]
        return token_id - self.offset

    def tokenize(self, text):
        return [self.vocabulary.id_to_token(i) for i in self.encode(text)]

    def detokenize(self, tokens):
        return self.decode([self.vocabulary.token_to_id(t) for t in tokens])

    def encode(self, text, add_bos=False, add_eos=False):
        ids = [
            self._project_id(int(i)) for i in _as_list(self.tokenizer.tokenize(text))
        ]
        return (
            ([self.bos_id] if add_bos else [])
            + ids
            + ([self.eos_id] if add_eos else [])
        )

    def decode(self, ids, skip_special=True):
        ids = np.asarray(ids)
        if ids.ndim != 1:
            raise ValueError(
                "`decode` takes one sequence (1-D); use `decode_batch` for 2-D. "
                f"Received: shape={ids.shape}"
            )
        parts, run = [], []
        for token_id in ids.tolist():
            if skip_special:
                if token_id == self.eos_id:
                    break
                if token_id in (self.pad_id, self.bos_id):
                    continue
            self.vocabulary.id_to_token(token_id)  # raises when out of range
            hub_id = self._hub_id(token_id)
            if hub_id is None:  # a special token the wrapped tokenizer lacks
                parts += [self._detokenize(run), self.special_tokens[token_id]]
                run = []
            else:
                run.append(hub_id)
        parts.append(self._detokenize(run))
        return "".join(parts)

    def _detokenize(self, hub_ids):
        return _as_str(self.tokenizer.detokenize(hub_ids)) if hub_ids else ""

    encode.__doc__ = Tokenizer.encode.__doc__
    decode.__doc__ = Tokenizer.decode.__doc__

    # Saving.
    def get_config(self):
        import keras

        with tempfile.TemporaryDirectory() as folder:
            if hasattr(self.tokenizer, "save_assets"):
                self.tokenizer.save_assets(folder)
            assets = {}
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), "rb") as file:
                    assets[name] = base64.b64encode(file.read()).decode()
        return {
            "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
            "assets": assets,
            "special_ids": dict(self.special_ids),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        tokenizer = config.pop("tokenizer")
        if isinstance(tokenizer, dict):
            tokenizer = _deserialize(tokenizer, config.pop("assets", None) or {})
        return cls(tokenizer, **config)

    def __repr__(self):
        return (
            f"KerasHubTokenizer({type(self.tokenizer).__name__}, offset={self.offset})"
        )


def _deserialize(config, assets):
    """A keras-hub tokenizer from its Keras config and base64 assets, in safe mode."""
    registered = config.get("registered_name") or ""
    if registered.startswith("keras_hub>"):
        _import_keras_hub()
    import keras

    from keras_rnnattn._keras_private import private_name

    if keras.saving.get_registered_object(registered) is None:
        raise ValueError(
            "A KerasHubTokenizer config must name a tokenizer class registered by "
            "keras-hub (or with keras.saving.register_keras_serializable). "
            f"Received: registered_name={registered!r}"
        )
    tokenizer = keras.saving.deserialize_keras_object(config, safe_mode=True)
    if assets:
        # The files are the config's own, written here: no path of the config
        # is opened, so reading them outside safe mode is safe.
        scope = private_name("keras.src.saving.serialization_lib", "SafeModeScope")
        with tempfile.TemporaryDirectory() as folder:
            for name, data in assets.items():
                if os.path.basename(name) != name or name.startswith("."):
                    raise ValueError(
                        f"An asset name must be a plain file name. Received: {name!r}"
                    )
                with open(os.path.join(folder, name), "wb") as file:
                    file.write(base64.b64decode(data, validate=True))
            with scope(False):
                tokenizer.load_assets(folder)
    return tokenizer
