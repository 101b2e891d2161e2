"""The shared base of the tokenizers: encoding, padding, decoding, JSON files."""

import json
import os

import numpy as np

from keras_rnnattn.text.normalization import normalize
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary

_FORMAT_VERSION = 1
_REGISTRY = {}


class Tokenizer:
    """Base class of `WordTokenizer`, `CharTokenizer`, `BpeTokenizer`,
    `SentencePieceTokenizer` and `KerasHubTokenizer`.

    Subclasses define `_split(normalized_text) -> tokens`, `_join(tokens) -> text`
    and `_fit(normalized_texts)`; everything else (ids, batches, padding,
    decoding, saving) is shared.

    Args:
        lowercase: bool, lowercase the text before splitting it.
        max_vocab: optional int, the largest vocabulary size, special tokens
            included.
        min_count: int, tokens seen fewer times in `fit` map to unk.
        special_tokens: four str, the pad, unk, bos and eos tokens (ids 0 to 3).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    def __init__(
        self,
        lowercase=False,
        max_vocab=None,
        min_count=1,
        special_tokens=SPECIAL_TOKENS,
    ):
        if max_vocab is not None and (not isinstance(max_vocab, int) or max_vocab < 5):
            raise ValueError(
                "`max_vocab` counts the 4 special tokens and must be None or an int "
                f">= 5. Received: max_vocab={max_vocab!r}"
            )
        if not isinstance(min_count, int) or min_count < 1:
            raise ValueError(
                f"`min_count` must be an int >= 1. Received: min_count={min_count!r}"
            )
        self.lowercase = bool(lowercase)
        self.max_vocab = max_vocab
        self.min_count = min_count
        self.special_tokens = tuple(special_tokens)
        self.vocabulary = None

    # Subclass hooks.
    def _split(self, text):
        raise NotImplementedError

    def _join(self, tokens):
        raise NotImplementedError

    def _fit(self, texts):
        raise NotImplementedError

    # Fitting and tokens.
    def fit(self, texts):
        """Builds the vocabulary (and, for BPE, the merges) from `texts`.

        Args:
            texts: iterable of str.

        Returns:
            The tokenizer itself.
        """
        if isinstance(texts, str):
            raise ValueError(
                "`fit` takes a list of texts, not one str. "
                f"Received: texts={texts[:50]!r}"
            )
        self._fit([self.normalize(text) for text in texts])
        return self

    def normalize(self, text):
        """Unicode NFC, and lowercasing when `lowercase=True`."""
        return normalize(text, lowercase=self.lowercase)

    def tokenize(self, text):
        """Returns the tokens (str) of `text`, after normalisation."""
        return self._split(self.normalize(text))

    def detokenize(self, tokens):
        """Joins tokens back into text."""
        return self._join(list(tokens))

    def _check_fitted(self):
        if self.vocabulary is None:
            raise ValueError(
                f"This {type(self).__name__} has no vocabulary yet: call "
                "`fit(texts)` or `load(path)` first."
            )

    # Ids.
    @property
    def vocabulary_size(self):
        self._check_fitted()
        return len(self.vocabulary)

    @property
    def pad_id(self):
        return 0

    @property
    def unk_id(self):
        return 1

    @property
    def bos_id(self):
        return 2

    @property
    def eos_id(self):
        return 3

    def encode(self, text, add_bos=False, add_eos=False):
        """Returns the ids of `text`.

        Args:
            text: str. Empty text gives `[]` (plus bos/eos when asked).
            add_bos: bool, start with `bos_id`.
            add_eos: bool, end with `eos_id`.

        Returns:
            list of int.
        """
        ids = self._ids([text])[0]
        return (
            ([self.bos_id] if add_bos else [])
            + ids
            + ([self.eos_id] if add_eos else [])
        )

    def _ids(self, texts):
        """The ids of each text, a list of lists (the hook `encode` and
        `encode_batch` share; a subclass may encode a batch at once)."""
        self._check_fitted()
        vocab = self.vocabulary
        return [[vocab.token_to_id(t) for t in self.tokenize(text)] for text in texts]

    def encode_batch(
        self,
        texts,
        max_length=None,
        add_bos=False,
        add_eos=False,
        padding="post",
        truncate=True,
    ):
        """Encodes texts into one padded int32 array.

        Args:
            texts: list of str.
            max_length: optional int, the number of columns; by default the
                longest encoded text.
            add_bos: bool, start each row with `bos_id`.
            add_eos: bool, end each row with `eos_id`.
            padding: `"post"` (pad at the end) or `"pre"` (pad at the start),
                with `pad_id` (0).
            truncate: bool; if True, longer texts lose their last tokens (bos and
                eos are kept), if False they raise a ValueError.

        Returns:
            int32 array `(len(texts), max_length)`.
        """
        if isinstance(texts, str):
            raise ValueError(
                "`encode_batch` takes a list of texts; use `encode` for one str. "
                f"Received: texts={texts[:50]!r}"
            )
        return self.pad(
            self._ids(texts),
            max_length=max_length,
            add_bos=add_bos,
            add_eos=add_eos,
            padding=padding,
            truncate=truncate,
            texts=texts,
        )

    def pad(
        self,
        rows,
        max_length=None,
        add_bos=False,
        add_eos=False,
        padding="post",
        truncate=True,
        texts=None,
    ):
        """Pads lists of ids (from `encode`) into one int32 array.

        For rows encoded once and measured before padding, such as sampled
        segmentations (`BpeTokenizer(dropout=...)`), which a second `encode`
        would change.

        Args:
            rows: list of lists of int.
            max_length, add_bos, add_eos, padding, truncate: as in `encode_batch`.
            texts: optional list of str, the texts of `rows`, named in errors.

        Returns:
            int32 array `(len(rows), max_length)`.

        Example:

        >>> from keras_rnnattn.text import WordTokenizer
        >>> tok = WordTokenizer().fit(["a b c"])
        >>> tok.pad([tok.encode("a b"), tok.encode("c")], add_eos=True).tolist()
        [[4, 5, 3], [6, 3, 0]]
        """
        if padding not in ("post", "pre"):
            raise ValueError(
                f"`padding` must be 'post' or 'pre'. Received: padding={padding!r}"
            )
        rows = [list(row) for row in rows]
        extra = int(add_bos) + int(add_eos)
        if max_length is None:
            max_length = max((len(row) + extra for row in rows), default=0)
        elif not isinstance(max_length, (int, np.integer)) or max_length < extra:
            raise ValueError(
                f"`max_length` must be an int >= {extra} (room for bos/eos). "
                f"Received: max_length={max_length!r}"
            )
        out = np.full((len(rows), max_length), self.pad_id, dtype="int32")
        for i, row in enumerate(rows):
            if len(row) + extra > max_length:
                if not truncate:
                    raise ValueError(
                        f"Text {i} has {len(row) + extra} tokens, more than "
                        f"max_length={max_length}: pass a larger `max_length` or "
                        "`truncate=True`."
                        + (f" Received: text={texts[i][:80]!r}" if texts else "")
                    )
                row = row[: max_length - extra]
            row = ([self.bos_id] if add_bos else []) + row
            row = row + ([self.eos_id] if add_eos else [])
            if padding == "post":
                out[i, : len(row)] = row
            elif row:
                out[i, -len(row) :] = row
        return out

    def decode(self, ids, skip_special=True):
        """Turns ids back into text.

        Args:
            ids: 1-D list or array of ints.
            skip_special: bool; if True, stop at the first eos and leave out pad
                and bos; if False, write every token, special ones included.

        Returns:
            str. Unknown ids are written as the unk token ("<unk>").
        """
        self._check_fitted()
        ids = np.asarray(ids)
        if ids.ndim != 1:
            raise ValueError(
                "`decode` takes one sequence (1-D); use `decode_batch` for 2-D. "
                f"Received: shape={ids.shape}"
            )
        tokens = []
        for token_id in ids.tolist():
            if skip_special:
                if token_id == self.eos_id:
                    break
                if token_id in (self.pad_id, self.bos_id):
                    continue
            tokens.append(self.vocabulary.id_to_token(token_id))
        return self._join(tokens)

    def decode_batch(self, ids, skip_special=True):
        """Decodes each row of a 2-D array of ids; returns a list of str."""
        return [self.decode(row, skip_special=skip_special) for row in ids]

    # TensorFlow.
    def to_tf_dataset(
        self,
        texts,
        labels=None,
        max_length=None,
        add_bos=False,
        add_eos=False,
        padding="post",
        truncate=True,
    ):
        """Encodes `texts` with NumPy and wraps the ids in a `tf.data.Dataset`.

        TensorFlow is imported here, never when the package is imported.

        Args:
            texts: list of str.
            labels: optional array-like, one per text; the dataset then yields
                `(ids, label)` pairs. Class indices, or label strings, which
                `AttentionClassifier.fit` maps through the model's `labels`.
            max_length, add_bos, add_eos, padding, truncate: as in `encode_batch`.

        Returns:
            An unbatched `tf.data.Dataset` of int32 rows `(max_length,)`: call
            `.batch(n)` on it before passing it to `fit`, `evaluate` or
            `predict`.
        """
        import tensorflow as tf

        ids = self.encode_batch(
            texts,
            max_length=max_length,
            add_bos=add_bos,
            add_eos=add_eos,
            padding=padding,
            truncate=truncate,
        )
        if labels is None:
            return tf.data.Dataset.from_tensor_slices(ids)
        labels = np.asarray(labels)
        if len(labels) != len(ids):
            raise ValueError(
                f"Expected one label per text ({len(ids)}). "
                f"Received: len(labels)={len(labels)}"
            )
        return tf.data.Dataset.from_tensor_slices((ids, labels))

    # Saving.
    def get_config(self):
        return {
            "lowercase": self.lowercase,
            "max_vocab": self.max_vocab,
            "min_count": self.min_count,
            "special_tokens": list(self.special_tokens),
            "vocabulary": (
                None if self.vocabulary is None else self.vocabulary.get_config()
            ),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        vocabulary = config.pop("vocabulary", None)
        tokenizer = cls(**config)
        if vocabulary is not None:
            tokenizer.vocabulary = Vocabulary.from_config(vocabulary)
        return tokenizer

    def save(self, path):
        """Writes the tokenizer to a JSON file (plain data, no pickle).

        Args:
            path: str, the file's path.

        Returns:
            list of str, the paths written (`[path]`; `SentencePieceTokenizer`
            adds its `.model` file).
        """
        data = {
            "class_name": type(self).__name__,
            "format_version": _FORMAT_VERSION,
            "config": self.get_config(),
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
        return [os.fspath(path)]

    @classmethod
    def load(cls, path):
        """Reads a tokenizer written by `save`.

        Called on `Tokenizer` it returns whichever class the file holds; called
        on a subclass it checks that the file holds that class.
        """
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or "class_name" not in data:
            raise ValueError(
                f"{path} is not a tokenizer file written by `save`: it has no "
                f"'class_name'. Received: path={str(path)!r}"
            )
        name = data["class_name"]
        if name not in _REGISTRY or (cls is not Tokenizer and name != cls.__name__):
            raise ValueError(
                f"{path} holds a {name}, which {cls.__name__}.load cannot read: use "
                f"{name}.load or Tokenizer.load. Received: path={str(path)!r}"
            )
        return _REGISTRY[name].from_config(data["config"])

    def __repr__(self):
        size = None if self.vocabulary is None else len(self.vocabulary)
        return (
            f"{type(self).__name__}(lowercase={self.lowercase}, vocabulary_size={size})"
        )
