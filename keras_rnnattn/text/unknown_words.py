"""Unknown-word replacement: each `<unk>` of a translation becomes the source word
its attention points at (Luong et al. 2015, "Addressing the Rare Word Problem in
Neural Machine Translation", the copy model without a dictionary).

A translator whose target vocabulary lacks a word (a name, a number, text in
another script) writes the unknown token there. Its attention at that step
points at the source position it translated; copying the source word found
there restores names and numbers and never shows a literal `<unk>`. Pure Python
and NumPy: the translator passes its alignments in.
"""

import numpy as np

from keras_rnnattn.text.kept_symbols import insert_symbols, symbol_weights
from keras_rnnattn.text.normalization import normalize, split_words

# How subword tokenizers mark the end or start of a word in a token's spelling.
_WORD_MARKS = ("</w>", "▁")


def source_words(tokenizer, text):
    """The source word of each token of `text`, as written in `text`.

    Args:
        tokenizer: a `keras_rnnattn.text` tokenizer.
        text: str, the source text.

    Returns:
        list of str, one per token of `tokenizer.tokenize(text)`: the whole
        word (Unicode NFC, case kept) the token belongs to. For a tokenizer
        that does not split text into words first, the token's own spelling
        without word marks.

    Example:

    >>> from keras_rnnattn.text import BpeTokenizer
    >>> bpe = BpeTokenizer(num_merges=10).fit(["the cat sat on the mat"])
    >>> bpe.tokenize("the Zorro cat")  # "Zorro" in pieces, unknown letters
    ['the</w>', '<unk>', 'o', '<unk>', '<unk>', 'o</w>', 'c', 'at</w>']
    >>> source_words(bpe, "the Zorro cat")
    ['the', 'Zorro', 'Zorro', 'Zorro', 'Zorro', 'Zorro', 'cat', 'cat']
    """
    tokens = tokenizer.tokenize(text)
    words = split_words(normalize(text))
    counts = [len(tokenizer.tokenize(word)) for word in words]
    if sum(counts) == len(tokens):
        return [word for word, count in zip(words, counts) for _ in range(count)]
    spellings = []
    for token in tokens:
        for mark in _WORD_MARKS:
            token = token.replace(mark, "")
        spellings.append(token)
    return spellings


def replace_unknown(tokenizer, ids, words, weights=None, source_ids=None):
    """Decodes target ids with each unknown token replaced by a source word.

    Args:
        tokenizer: the target tokenizer.
        ids: sequence of int, the target ids (the end token and what follows
            it are left out).
        words: list of str, the source word of each source token
            (`source_words`).
        weights: optional float array `(len(ids) or more, S)`, the attention
            weights of each target step over the source tokens (S may include
            the end token and padding, which are not copied). Without it (a
            model without attention) the k-th unknown target token copies
            the k-th source word with an unknown token, else the word at the
            same relative place.
        source_ids: optional sequence of int, the source ids (for the
            fallback without weights).

    Returns:
        str: the translation. Unknown tokens in a row (with nothing but
        spaces between them) that point at the same source word copy it once.

    Example:

    >>> import numpy as np
    >>> from keras_rnnattn.text import WordTokenizer
    >>> tok = WordTokenizer().fit(["I met her in ."])
    >>> ids = tok.encode("I met Ada in Zürich.")  # two unknown words
    >>> tok.decode(ids)
    'I met <unk> in <unk>.'
    >>> words = ["Ich", "traf", "Ada", "in", "Zürich", "."]
    >>> weights = np.eye(6)  # step i attends to source word i
    >>> replace_unknown(tok, ids, words, weights)
    'I met Ada in Zürich.'
    """
    ids = [int(i) for i in ids]
    if tokenizer.eos_id in ids:
        ids = ids[: ids.index(tokenizer.eos_id)]
    unk = tokenizer.unk_id
    steps = [j for j, i in enumerate(ids) if i == unk]
    if not steps:
        return tokenizer.decode(ids)
    copies = [
        _copied_word(j, k, len(ids), words, weights, source_ids, unk)
        for k, j in enumerate(steps)
    ]
    unk_text = tokenizer.vocabulary.id_to_token(unk)
    parts = tokenizer.decode(ids).split(unk_text)
    if len(parts) != len(copies) + 1:  # the unknown token spelled otherwise
        return tokenizer.decode([i for i in ids if i != unk])
    text, previous, since = parts[0], None, ""
    for copy, part in zip(copies, parts[1:]):
        if copy is not None and copy == previous and not since.strip():
            # Unknown tokens in a row on the same source word: one copy.
            text, since = text.rstrip() + part, since + part
            continue
        text, previous, since = text + (copy or "") + part, copy, part
    return " ".join(text.split())


def _copied_word(step, k, n_steps, words, weights, source_ids, unk):
    """The source word the k-th unknown token (at target `step`) copies."""
    if not words:
        return None
    if weights is not None:
        row = np.asarray(weights[step], dtype="float64")[: len(words)]
        return words[int(np.argmax(row))]
    unknown = []
    if source_ids is not None:
        unknown = [p for p, i in enumerate(source_ids[: len(words)]) if i == unk]
    if k < len(unknown):
        return words[unknown[k]]
    return words[min(len(words) - 1, step * len(words) // max(n_steps, 1))]


def decode_translations(
    tokenizers, texts, source_ids, tokens, alignments=None, replace=True, symbols=None
):
    """The translations of a batch, each unknown token replaced by a source word.

    Args:
        tokenizers: `(source_tokenizer, target_tokenizer)` of the translator.
        texts: list of str, the source texts.
        source_ids: int array `(B, S)`, their ids as the model read them.
        tokens: int array `(B, L)`, the target ids of each text.
        alignments: None (a model without attention), or a callable
            `(source_ids, tokens) -> (B', L, S)` attention weights, called
            once with the rows that hold an unknown token or a symbol, if any.
        replace: bool; False decodes the ids as they are (`<unk>` kept).
        symbols: None, or one `split_symbols` list per text (the texts then
            are the reduced ones): each symbol is put back into its
            translation (`keras_rnnattn.text.kept_symbols`).

    Returns:
        list of str.
    """
    source_tokenizer, target_tokenizer = tokenizers
    unk = target_tokenizer.unk_id
    symbols = symbols or [[] for _ in texts]
    rows = [
        r
        for r in range(len(texts))
        if symbols[r] or (replace and unk in _before_eos(tokens[r], target_tokenizer))
    ]
    weights = None
    if rows and alignments is not None:
        weights = np.asarray(alignments(source_ids[rows], tokens[rows]))
    out = []
    for r, text in enumerate(texts):
        if r not in rows:
            out.append(target_tokenizer.decode(tokens[r]))
            continue
        row_weights = None if weights is None else weights[rows.index(r)]
        words = source_words(source_tokenizer, text)
        if symbols[r] and row_weights is not None:
            out.append(
                _with_symbols(
                    target_tokenizer, tokens[r], words, row_weights, symbols[r], replace
                )
            )
            continue
        if replace:
            translation = replace_unknown(
                target_tokenizer, tokens[r], words, row_weights, source_ids[r]
            )
        else:
            translation = target_tokenizer.decode(tokens[r])
        if symbols[r]:  # no attention: by relative position among the words
            translation = _symbols_by_position(translation, symbols[r], len(words))
        out.append(translation)
    return out


def _with_symbols(tokenizer, ids, words, weights, symbols, replace):
    """A translation with its symbols put back where the attention points."""
    ids, rows = insert_symbols(
        ids, symbols, weights, len(words), tokenizer.unk_id, tokenizer.eos_id
    )
    columns = symbol_weights(rows, weights, len(words), len(symbols))
    # A symbol stands as a word of its own (a subword decoder would join an
    # unknown token to the piece after it); spaces are normalised at the end.
    all_words = list(words) + [f" {symbol} " for symbol, _ in symbols]
    if not replace:  # only the symbols' unknown tokens are replaced
        unk_text = tokenizer.vocabulary.id_to_token(tokenizer.unk_id)
        all_words = [unk_text] * len(words) + all_words[len(words) :]
    return replace_unknown(tokenizer, ids, all_words, columns)


def _symbols_by_position(translation, symbols, n_source):
    """`translation` with each symbol inserted among its words by relative place."""
    words = translation.split()
    placed = []
    for symbol, before in symbols:
        at = len(words) if before >= n_source else round(before / n_source * len(words))
        placed.append((at, symbol))
    for at, symbol in reversed(placed):
        words.insert(at, symbol)
    return " ".join(words)


def _before_eos(ids, tokenizer):
    ids = [int(i) for i in ids]
    return ids[: ids.index(tokenizer.eos_id)] if tokenizer.eos_id in ids else ids
