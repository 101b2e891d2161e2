"""Symbols a translator cannot read (emoji, pictographs), kept in its output.

A source word made only of characters that are neither letters nor digits, and
that the source tokenizer reads as nothing but unknown tokens (``🍕``, ``😀``,
``♥``), carries no meaning the translator learned: fed to it, the unknown
token often ends the translation there. Such symbols are taken out of the
source before translating and put back into the translation after the target
token whose attention points most at the source word just before the symbol
(at the start for a symbol that opens the text, at the end for one that closes
it; by relative position for a model without attention). Pure Python and
NumPy: the translator passes its alignments in.
"""

import re

import numpy as np

from keras_rnnattn.text.normalization import normalize

_SPACES = re.compile(r"\s+")


def _is_symbol(word, tokenizer):
    """Whether `word` has no letter or digit and reads as unknown tokens only
    (besides tokens that spell nothing)."""
    if any(ch.isalnum() for ch in word):
        return False
    ids = tokenizer.encode(word)
    if tokenizer.unk_id not in ids:
        return False
    # What else it reads spells nothing (a subword's end-of-word mark).
    return not tokenizer.decode([i for i in ids if i != tokenizer.unk_id]).strip()


def split_symbols(tokenizer, text):
    """`text` without the symbols `tokenizer` cannot read, and where they were.

    Args:
        tokenizer: the source tokenizer (a `keras_rnnattn.text` tokenizer).
        text: str, the source text.

    Returns:
        `(reduced, symbols)`: `reduced` the text (Unicode NFC) without the
        symbols, `symbols` a list of `(symbol, before)` in text order, where
        `before` is the number of tokens of `reduced` that precede the symbol.
        A text without such symbols comes back as it is, with `[]`.

    Example:

    >>> from keras_rnnattn.text import WordTokenizer
    >>> tok = WordTokenizer().fit(["ich liebe pizza und käse"])
    >>> split_symbols(tok, "ich liebe 🍕 und käse 😀")
    ('ich liebe und käse', [('🍕', 2), ('😀', 4)])
    """
    text = normalize(text)
    pieces = text.split()
    if not any(_is_symbol(piece, tokenizer) for piece in pieces):
        return text, []
    kept, symbols = [], []
    for piece in pieces:
        if _is_symbol(piece, tokenizer):
            before = len(tokenizer.tokenize(" ".join(kept))) if kept else 0
            symbols.append((piece, before))
        else:
            kept.append(piece)
    return _SPACES.sub(" ", " ".join(kept)).strip(), symbols


def insert_symbols(ids, symbols, weights, n_source, unk_id, eos_id):
    """Target ids with an unknown token where each symbol goes back in.

    Args:
        ids: sequence of int, the translation's target ids (what follows the
            end token is left out).
        symbols: the `(symbol, before)` list of `split_symbols`.
        weights: None (a model without attention) or a float array
            `(steps, S)`: each target step's attention over the source tokens.
        n_source: int, the number of source tokens of the reduced text.
        unk_id, eos_id: the target tokenizer's unknown and end ids.

    Returns:
        `(ids, rows)`: the ids with one `unk_id` per symbol, and for each id
        the source column its copy comes from: the step's own attention row
        index (an int) for a translated token, or `("symbol", k)` for the k-th
        symbol.

    Example:

    >>> import numpy as np
    >>> weights = np.eye(3)  # target step t attends to source token t
    >>> insert_symbols([7, 8, 9, 2], [("🍕", 2)], weights, 3, unk_id=1, eos_id=2)
    ([7, 8, 1, 9], [0, 1, ('symbol', 0), 2])
    """
    ids = [int(i) for i in ids]
    if eos_id in ids:
        ids = ids[: ids.index(eos_id)]
    after = [_insert_after(b, len(ids), weights, n_source) for _, b in symbols]
    out, rows = [], []
    for position in range(-1, len(ids)):
        if position >= 0:
            out.append(ids[position])
            rows.append(position)
        for k, a in enumerate(after):
            if a == position:
                out.append(unk_id)
                rows.append(("symbol", k))
    return out, rows


def _insert_after(before, n_steps, weights, n_source):
    """The target step after which a symbol preceded by `before` source tokens goes
    (-1: before the first token)."""
    if before <= 0 or n_steps == 0:
        return -1
    if before >= n_source:
        return n_steps - 1
    if weights is None:
        return max(0, round(before / n_source * n_steps) - 1)
    column = np.asarray(weights, dtype="float64")[:n_steps, before - 1]  # (steps,)
    return int(np.argmax(column))


def symbol_weights(rows, weights, n_words, n_symbols):
    """Attention rows for `replace_unknown` over the source words and the symbols.

    Args:
        rows: the `rows` of `insert_symbols`.
        weights: None or a float array `(steps, S)`.
        n_words: int, the number of source words (columns before the symbols).
        n_symbols: int.

    Returns:
        A float array `(len(rows), n_words + n_symbols)`: a translated token's
        attention over the source words (zeros without attention), a symbol's
        one-hot on its own column.
    """
    out = np.zeros((len(rows), n_words + n_symbols), dtype="float32")
    for t, row in enumerate(rows):
        if isinstance(row, tuple):
            out[t, n_words + row[1]] = 1.0
        elif weights is not None:
            source = np.asarray(weights[row], dtype="float32")[:n_words]
            out[t, : len(source)] = source
    return out
