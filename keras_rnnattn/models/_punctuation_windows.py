"""Tags for punctuation restoring: piece ids per word, windows, tags per word."""

import keras
import numpy as np

from keras_rnnattn.text.punctuation import punctuation_tags
from keras_rnnattn.text.tokenizer import Tokenizer
from keras_rnnattn.text.word_pieces import word_piece_ids, word_tags
from keras_rnnattn.text.word_tokenizer import WordTokenizer

PAD_MULTIPLE = 32  # windows are padded to a multiple of this many pieces


def read_words(text):
    """The lowercase words of `text` (punctuation and capitals dropped)."""
    return punctuation_tags(text)[0]


def window_words(tagger):
    """The words in one window of `tagger`: its `max_length` for a word
    tokenizer, half of it for subwords (a window of N words rarely has 2N
    pieces); 64 without a `max_length`."""
    if not tagger.max_length:
        return 64
    if isinstance(tagger.tokenizer, WordTokenizer):
        return max(2, tagger.max_length)
    return max(2, tagger.max_length // 2)


def central_windows(n_words, window, stride=None):
    """Windows over `n_words` words and the words each one decides.

    Windows of `window` words start every `stride` (default `window // 2`)
    words; each word is decided by the window in which it lies farthest
    from an edge: window k decides `[k·stride + m, (k+1)·stride + m)` with
    `m = (window - stride) // 2`, the first window from word 0 and the last
    (the first that reaches `n_words`) to the end. Where the windows start
    depends only on the position in the text, so a text restored whole and
    the same text pushed in pieces get the same windows.

    Args:
        n_words: int.
        window: int >= 2.
        stride: optional int in [1, window].

    Returns:
        list of `(start, end, keep_start, keep_end)`.

    Example:

    >>> central_windows(10, 4)
    [(0, 4, 0, 3), (2, 6, 3, 5), (4, 8, 5, 7), (6, 10, 7, 10)]
    """
    stride = stride or max(1, window // 2)
    margin = (window - stride) // 2
    out, k = [], 0
    while True:
        start = k * stride
        end = min(start + window, n_words)
        last = start + window >= n_words
        keep_start = 0 if k == 0 else start + margin
        keep_end = n_words if last else start + margin + stride
        out.append((start, end, keep_start, keep_end))
        if last:
            return out
        k += 1


def padded(rows, pad_id=0):
    """Rows of ids as an int32 array padded to a multiple of `PAD_MULTIPLE`."""
    width = max(len(r) for r in rows)
    width = -(-width // PAD_MULTIPLE) * PAD_MULTIPLE
    out = np.full((len(rows), width), pad_id, "int32")
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def tag_word_lists(tagger, word_lists, batch_size=32, with_marks=False):
    """The tagger's tag of each word of each list (each list tagged as one text).

    Args:
        tagger: a `SequenceTagger` with `PUNCTUATION_TAGS`.
        word_lists: list of lists of str, lowercase words.
        batch_size: int.
        with_marks: bool, also return each word's mark probabilities.

    Returns:
        list of lists of tag strings; with `with_marks`, `(tags, marks)`
        where `marks[i]` is a `(words, 4)` array: the probabilities of no
        mark, a comma, a full stop and a question mark after each word (its
        last piece's, summed over the cases).
    """
    if not isinstance(tagger.tokenizer, Tokenizer):
        raise ValueError("Restoring punctuation needs a tagger with a tokenizer.")
    pieces = [word_piece_ids(tagger.tokenizer, words) for words in word_lists]
    rows = [[i for p in word_pieces for i in p] for word_pieces in pieces]
    out = [[] for _ in word_lists]
    marks = [np.zeros((0, len(MARKS)), "float32") for _ in word_lists]
    todo = [i for i, row in enumerate(rows) if row]
    if todo:
        ids = padded([rows[i] for i in todo], tagger.pad_id)  # (N, S)
        # `predict_on_batch` per batch: a stream tags one window at a time, and
        # `predict` costs tens of milliseconds a call before any work.
        probabilities = np.concatenate(
            [
                keras.ops.convert_to_numpy(
                    tagger.predict_on_batch(ids[k : k + batch_size])
                )
                for k in range(0, len(ids), batch_size)
            ]
        )  # (N, S, tags)
        best = np.argmax(probabilities, axis=-1)  # (N, S)
        by_mark = _mark_columns(tagger.tags)  # (tags, 4)
        for row, probs, i in zip(best, probabilities, todo):
            lengths = [len(p) for p in pieces[i]]
            tags = [tagger.tags[j] for j in row[: sum(lengths)]]
            out[i] = word_tags(lengths, tags)
            last = np.cumsum(lengths) - 1  # each word's last piece
            marks[i] = probs[last] @ by_mark  # (words, 4)
    return (out, marks) if with_marks else out


MARKS = ("O", "COMMA", "PERIOD", "QUESTION")


def _mark_columns(tags):
    """A `(tags, 4)` 0/1 matrix: which mark of `MARKS` each tag carries."""
    out = np.zeros((len(tags), len(MARKS)), "float32")
    for i, tag in enumerate(tags):
        out[i, MARKS.index(tag.split("_")[1])] = 1.0
    return out


def central_window_tags(tagger, words, window, batch_size=32):
    """Each word's tag from the window where it is central (`central_windows`).

    Args:
        tagger: a `SequenceTagger` with `PUNCTUATION_TAGS`.
        words: list of str, lowercase words of one running text.
        window: int, the words in a window.
        batch_size: int, windows tagged at once.

    Returns:
        list of str, one tag per word.
    """
    if not words:
        return []
    windows = central_windows(len(words), window)
    tagged = tag_word_lists(tagger, [words[a:b] for a, b, _, _ in windows], batch_size)
    out = []
    for (a, _, keep_a, keep_b), tags in zip(windows, tagged):
        out += tags[keep_a - a : keep_b - a]
    return out
