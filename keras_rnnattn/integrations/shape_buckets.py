"""A Translator's words decoded at a few fixed shapes, each compiled once.

A G2P fallback inside a TTS program meets a new batch size and word length at
almost every sentence; each new shape compiles a new program on JAX (seconds)
and retraces on TensorFlow. Padding the source ids to one of a few widths and
the batch to one of a few sizes keeps the shapes to those `warm_up` compiles
at load. Padding changes no output: a row's length limit is its own
(`generate_ids` with `max_length=None`), and padded rows are dropped.
"""

import numpy as np

# Source widths (ids, the end token included; None: the model's longest) and
# batch sizes: a word alone (misaki asks word by word) and a primed sentence.
LENGTHS = (16, None)
BATCHES = (1, 16)


def widths(model, lengths=LENGTHS):
    """The source widths of `model`, within its `max_source_length`."""
    longest = int(model.max_source_length)
    return sorted({min(longest, w or longest) for w in lengths})


def bucketed_translate(model, texts, beam_size=1, lengths=LENGTHS, batches=BATCHES):
    """`model.translate(texts, beam_size=...)` at the fixed shapes.

    Args:
        model: a `Translator` (a `Seq2SeqTask`).
        texts: list of str, each at most `max_source_length - 1` tokens.
        beam_size: int >= 1.
        lengths: the source widths (None: the model's longest).
        batches: the batch sizes; more texts go in batches of the largest.

    Returns:
        list of str, as `translate` gives them.
    """
    out = []
    sizes, largest = sorted(batches), max(batches)
    for start in range(0, len(texts), largest):
        chunk = list(texts[start : start + largest])
        ids = model.encode_source(chunk)  # (b, s)
        width = next(w for w in widths(model, lengths) if w >= ids.shape[1])
        rows = next(b for b in sizes if b >= len(chunk))
        padded = np.zeros((rows, width), "int32")  # (rows, width)
        padded[: len(chunk), : ids.shape[1]] = ids
        padded[len(chunk) :] = padded[0]  # a real row: no empty source
        tokens, _ = model.generate_ids(padded, beam_size=beam_size)
        out += [_decode(model.target_tokenizer, row) for row in tokens[: len(chunk)]]
    return out


def warm_up(model, beam_size=1, lengths=LENGTHS, batches=BATCHES):
    """Compiles every fixed shape once (a few seconds at load, none later).

    Returns:
        int, the shapes compiled.
    """
    eos = model.source_tokenizer.eos_id
    count = 0
    for width in widths(model, lengths):
        for rows in batches:
            ids = np.zeros((rows, width), "int32")
            ids[:, 0] = eos
            model.generate_ids(ids, beam_size=beam_size)
            count += 1
    return count


def _decode(tokenizer, row):
    row = list(np.asarray(row).reshape(-1))
    if tokenizer.eos_id in row:
        row = row[: row.index(tokenizer.eos_id)]
    return tokenizer.decode(row)
