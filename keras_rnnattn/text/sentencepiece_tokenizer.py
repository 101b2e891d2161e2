"""Subword tokenizer trained and run by the `sentencepiece` library (BPE or unigram)."""

import base64
import binascii
import io
import os

from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.vocabulary import SPECIAL_TOKENS, Vocabulary

MODEL_TYPES = ("bpe", "unigram")
INSTALL_HINT = 'pip install ".[text]"'


def import_sentencepiece():
    """The `sentencepiece` module, or an ImportError that names the extra."""
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(
            "SentencePieceTokenizer needs the `sentencepiece` package, which is "
            f"not installed: {INSTALL_HINT} (or pip install sentencepiece)."
        ) from None
    return sentencepiece


def _proto_bytes(proto):
    """`proto` (bytes, or the path of a `.model` file) as bytes."""
    if isinstance(proto, (bytes, bytearray)):
        return bytes(proto)
    if isinstance(proto, (str, os.PathLike)):
        with open(proto, "rb") as file:
            return file.read()
    raise ValueError(
        "`proto` must be the bytes of a SentencePiece model or the path of its "
        f"`.model` file. Received: proto of type {type(proto).__name__}"
    )


class SentencePieceTokenizer(Tokenizer):
    """Subword tokenizer (BPE or unigram) trained and run by SentencePiece.

    `fit` trains a SentencePiece model (Kudo and Richardson, 2018) in memory
    from the texts (no file is written) with the project's special ids: pad 0,
    unk 1, bos 2 and eos 3, as every `keras_rnnattn.text` tokenizer. Words keep
    their leading space as the `"▁"` mark and SentencePiece's own normalisation
    is off (the text is only put in Unicode NFC, and lowercased where asked),
    so decoding is lossless: `decode(encode(s)) == s` for any NFC text made of
    characters seen in training. A character never seen becomes `unk_id`
    (decoded as `"<unk>"`), or its UTF-8 bytes with `byte_fallback=True`.

    The trained model is the standard SentencePiece protocol buffer
    (`model_proto`), which keras-hub's `SentencePieceTokenizer`, TensorFlow
    Text and SentencePiece's C++, Java and Swift runtimes read and which gives
    them the same ids. `get_config` holds it in base64, so a model's
    `config.json` or `.keras` file is complete on its own; `save(path)` writes
    the JSON file and the `.model` file beside it.

    With `alpha > 0`, `encode` samples a segmentation (subword regularisation:
    BPE-dropout with probability `alpha` for `"bpe"`, unigram sampling with
    smoothing `alpha` for `"unigram"`), a regulariser for training data
    re-encoded each epoch; inference uses `alpha=0` (the default), and the
    attribute may be set after `fit`.

    Needs the `sentencepiece` package: `pip install ".[text]"`.

    Args:
        vocabulary_size: int, the target vocabulary size, the four special
            tokens included (a soft limit: a small text may give fewer).
            Default 8000.
        model_type: `"bpe"` or `"unigram"`.
        character_coverage: float in (0, 1], the share of the characters of
            the training text kept in the vocabulary (1.0 for alphabetic
            languages, 0.9995 for Chinese or Japanese).
        lowercase: bool, lowercase the text first.
        byte_fallback: bool, spell unknown characters as UTF-8 byte pieces
            (256 of the vocabulary's ids) instead of unk.
        alpha: float in [0, 1], the sampling parameter of `encode`; 0 for
            inference.
        special_tokens: four str, the pad, unk, bos and eos tokens (ids 0 to 3).
        proto: optional bytes of a trained SentencePiece model, or the path of
            its `.model` file, with pad, unk, bos and eos at ids 0 to 3 (set by
            `from_config`; leave it None and call `fit`).

    Example:

    >>> texts = ["the cat sat on the mat.", "the dog sat on the log!"] * 10
    >>> tok = SentencePieceTokenizer(vocabulary_size=40).fit(texts)
    >>> tok.tokenize("the cats")
    ['▁the', '▁cat', 's']
    >>> tok.decode(tok.encode("the  dog sat."))  # lossless: both spaces come back
    'the  dog sat.'
    >>> tok.decode(tok.encode("the zebra"))  # "z", "b" and "r" were never seen
    'the <unk>e<unk>a'
    >>> tok.encode_batch(["the cat", "a"], add_eos=True).tolist()
    [[7, 17, 3], [25, 27, 3]]
    """

    def __init__(
        self,
        vocabulary_size=8000,
        model_type="bpe",
        character_coverage=1.0,
        lowercase=False,
        byte_fallback=False,
        alpha=0.0,
        special_tokens=SPECIAL_TOKENS,
        proto=None,
    ):
        if not isinstance(vocabulary_size, int) or vocabulary_size < 5:
            raise ValueError(
                "`vocabulary_size` counts the 4 special tokens and must be an int "
                f">= 5. Received: vocabulary_size={vocabulary_size!r}"
            )
        super().__init__(
            lowercase=lowercase,
            max_vocab=vocabulary_size,
            special_tokens=special_tokens,
        )
        if model_type not in MODEL_TYPES:
            raise ValueError(
                f"`model_type` must be one of {MODEL_TYPES}. "
                f"Received: model_type={model_type!r}"
            )
        if not isinstance(character_coverage, (int, float)) or not (
            0 < character_coverage <= 1
        ):
            raise ValueError(
                "`character_coverage` must be a float in (0, 1]. "
                f"Received: character_coverage={character_coverage!r}"
            )
        self.model_type = model_type
        self.character_coverage = float(character_coverage)
        self.byte_fallback = bool(byte_fallback)
        self.alpha = alpha
        self.model_proto = None
        self._processor = None
        if proto is not None:
            self._set_proto(_proto_bytes(proto))

    @property
    def alpha(self):
        return self._alpha

    @alpha.setter
    def alpha(self, value):
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(
                "`alpha` is the sampling parameter of `encode`, a float in [0, 1] "
                f"(0 for inference). Received: alpha={value!r}"
            )
        self._alpha = float(value)

    # The model.
    def _set_proto(self, proto):
        spm = import_sentencepiece()
        try:
            processor = spm.SentencePieceProcessor(model_proto=proto)
        except (RuntimeError, OSError) as error:
            raise ValueError(
                f"`proto` is not a SentencePiece model ({error}). "
                f"Received: {len(proto)} bytes"
            ) from None
        ids = (processor.pad_id(), processor.unk_id())
        ids += (processor.bos_id(), processor.eos_id())
        if ids != (0, 1, 2, 3):
            raise ValueError(
                "The SentencePiece model must have pad, unk, bos and eos at ids 0 "
                "to 3, as every keras_rnnattn tokenizer: train it with "
                "`SentencePieceTokenizer.fit`, or with pad_id=0, unk_id=1, "
                "bos_id=2, eos_id=3, or wrap it in `KerasHubTokenizer`. "
                f"Received: pad, unk, bos, eos ids {ids}"
            )
        pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
        self.special_tokens = tuple(pieces[:4])
        self.vocabulary = Vocabulary(pieces[4:], special_tokens=self.special_tokens)
        self.model_proto = proto
        self._processor = processor

    def _fit(self, texts):
        spm = import_sentencepiece()
        texts = [text for text in texts if text]
        if not texts:
            raise ValueError(
                "`fit` needs at least one non-empty text. Received: no text"
            )
        pad, unk, bos, eos = self.special_tokens
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts),
                model_writer=model,
                vocab_size=self.max_vocab,
                model_type=self.model_type,
                character_coverage=self.character_coverage,
                byte_fallback=self.byte_fallback,
                pad_id=0,
                unk_id=1,
                bos_id=2,
                eos_id=3,
                pad_piece=pad,
                unk_piece=unk,
                bos_piece=bos,
                eos_piece=eos,
                unk_surface=unk,
                normalization_rule_name="identity",
                remove_extra_whitespaces=False,
                hard_vocab_limit=False,
                split_digits=False,
                num_threads=1,  # deterministic
                minloglevel=2,
            )
        except RuntimeError as error:
            raise ValueError(
                f"SentencePiece could not train on these texts ({error}). "
                f"Received: vocabulary_size={self.max_vocab}, "
                f"model_type={self.model_type!r}"
            ) from None
        self._set_proto(model.getvalue())

    # Splitting and joining.
    def _encode(self, texts, out_type=int):
        """SentencePiece's encoding of normalised `texts` (a str or a list)."""
        if self._alpha:  # nbest_size=-1: sample from all segmentations
            return self._processor.encode(
                texts,
                out_type=out_type,
                enable_sampling=True,
                alpha=self._alpha,
                nbest_size=-1,
            )
        return self._processor.encode(texts, out_type=out_type)

    def _split(self, text):
        self._check_fitted()
        return self._encode(text, out_type=str)

    def _join(self, tokens):
        specials = set(self.special_tokens) - {self.special_tokens[1]}
        parts, pieces = [], []
        for token in tokens:
            if token in specials:  # written as they are (skip_special=False)
                parts += [self._processor.decode_pieces(pieces), token]
                pieces = []
            else:
                pieces.append(token)
        parts.append(self._processor.decode_pieces(pieces))
        return "".join(parts)

    def _ids(self, texts):
        self._check_fitted()
        return self._encode([self.normalize(text) for text in texts])

    # Saving.
    def get_config(self):
        proto = self.model_proto
        return {
            "vocabulary_size": self.max_vocab,
            "model_type": self.model_type,
            "character_coverage": self.character_coverage,
            "lowercase": self.lowercase,
            "byte_fallback": self.byte_fallback,
            "alpha": self._alpha,
            "special_tokens": list(self.special_tokens),
            "proto": None if proto is None else base64.b64encode(proto).decode(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        proto = config.pop("proto", None)
        if proto is not None:
            try:
                proto = base64.b64decode(proto, validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ValueError(
                    "The config's `proto` must be a SentencePiece model in base64, "
                    "as `get_config` writes it. Received: proto of type "
                    f"{type(proto).__name__}"
                ) from None
        return cls(proto=proto, **config)

    def save(self, path):
        """Writes the tokenizer to a JSON file and its model beside it.

        The JSON file (what `Tokenizer.load` reads) holds the model too; the
        `.model` file of the same name (`tokenizer.json` -> `tokenizer.model`)
        is for SentencePiece's own runtimes and keras-hub.

        Args:
            path: str, the JSON file's path.

        Returns:
            list of str, the paths written: the JSON file, then the `.model`
            file (when the tokenizer is fitted).
        """
        written = super().save(path)
        if self.model_proto is not None:
            model_path = model_file_path(path)
            with open(model_path, "wb") as file:
                file.write(self.model_proto)
            written.append(model_path)
        return written

    def __getstate__(self):  # the processor is rebuilt from the proto
        state = dict(self.__dict__)
        state["_processor"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.model_proto is not None:
            self._set_proto(self.model_proto)

    def __repr__(self):
        size = None if self.vocabulary is None else len(self.vocabulary)
        return (
            f"SentencePieceTokenizer(model_type={self.model_type!r}, "
            f"vocabulary_size={size})"
        )


def model_file_path(json_path):
    """The `.model` file that `SentencePieceTokenizer.save` writes beside `json_path`."""
    return os.path.splitext(os.fspath(json_path))[0] + ".model"
