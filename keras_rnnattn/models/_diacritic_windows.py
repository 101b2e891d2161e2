"""Diacritics restoration with a character tagger: texts cut into windows,
each character tagged with the marks to add, the marks put back.

Functions with explicit arguments, used by `SequenceTagger.restore_diacritics`.
"""

import unicodedata

import numpy as np

from keras_rnnattn.text.diacritics import (
    NO_MARK,
    apply_diacritics,
    char_ids,
    marks_of,
    model_text,
    strip_diacritics,
    text_windows,
)

# The widths a window is padded to: few shapes, so that few compiles.
PADDED_WIDTHS = (64, 128, 256, 512)


def check_diacritic_tags(tags, owner):
    """Raises `ValueError` unless `tags` are diacritic tags with `NO_MARK`."""
    problem = tags is None or NO_MARK not in tags
    if not problem:
        try:
            for tag in tags:
                marks_of(tag)
        except ValueError:
            problem = True
    if problem:
        raise ValueError(
            f"{owner}: the tagger's tags must be diacritic tags "
            f"(`keras_rnnattn.text.diacritic_tags`: {NO_MARK!r} and mark names "
            f"such as 'acute' or 'caron'); train it on `diacritic_tags` of "
            f"text with diacritics. Received: tags={tags}"
        )


def padded_width(length, max_length):
    """The smallest of `PADDED_WIDTHS` (or `max_length`) that holds `length`."""
    for width in PADDED_WIDTHS:
        if length <= width and (max_length is None or width <= max_length):
            return width
    return max_length or length


def windows(texts, width):
    """`(text index, start, end)` of every window of every text."""
    return [
        (i, start, end)
        for i, text in enumerate(texts)
        for start, end in text_windows(text, width)
        if end > start
    ]


def predicted_tags(tagger, texts, batch_size):
    """The tag of every character of each model text, window by window."""
    width = tagger.max_length or PADDED_WIDTHS[-1]
    spans = windows(texts, width)
    tags = [[NO_MARK] * len(text) for text in texts]
    by_width = {}
    for span in spans:
        i, start, end = span
        by_width.setdefault(padded_width(end - start, width), []).append(span)
    for pad_to, group in sorted(by_width.items()):
        ids = np.full((len(group), pad_to), tagger.pad_id, "int32")
        for row, (i, start, end) in enumerate(group):
            ids[row, : end - start] = char_ids(tagger.tokenizer, texts[i][start:end])
        probs = tagger.predict(ids, batch_size=batch_size, verbose=0)  # (N, W, T)
        best = np.argmax(probs, axis=-1)  # (N, W)
        for row, (i, start, end) in enumerate(group):
            tags[i][start:end] = [tagger.tags[j] for j in best[row, : end - start]]
    return tags


def restore_diacritics(tagger, texts, batch_size=32):
    """Each text with the marks the tagger puts on its letters.

    Args:
        tagger: a `SequenceTagger` with a character tokenizer and diacritic
            tags.
        texts: list of str.
        batch_size: int.

    Returns:
        list of str in NFC: each text with marks added; every other
        character, its case and the marks already there are kept.
    """
    originals = [unicodedata.normalize("NFC", text) for text in texts]
    read = [model_text(strip_diacritics(text)) for text in originals]
    tags = predicted_tags(tagger, read, batch_size)
    return [apply_diacritics(text, t) for text, t in zip(originals, tags)]
