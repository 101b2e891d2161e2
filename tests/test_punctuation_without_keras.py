"""The punctuation card's LiteRT example runs where Keras, TensorFlow and this
package can't, and restores text as `restore_punctuation` does."""

import os

import pytest

from tests.backends import on_one_backend
from tests.without_keras import card_block, run_without_keras

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD = os.path.join(REPO, "applications", "punctuation_en", "README.md")
TEMPLATES = [
    "where is the {}?",
    "the {} is here.",
    "yes, the {} is red.",
    "why is it {}?",
]
NOUNS = ["dog", "cat", "car", "book", "Sarah"]
TEXTS = ["where is the book the car is red", "why is it sarah", "yes the dog is here"]


def card_example():
    """The card's LiteRT block: the python block after its introduction."""
    return card_block(CARD, "Restoring with LiteRT alone")


@on_one_backend
def test_the_example_restores_as_keras_without_keras(tmp_path):
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("sentencepiece")
    keras = pytest.importorskip("keras")
    from keras_rnnattn.export import export_model
    from keras_rnnattn.models import SequenceTagger
    from keras_rnnattn.text import (
        PUNCTUATION_TAGS,
        SentencePieceTokenizer,
        piece_tags,
        punctuation_tags,
        word_piece_ids,
    )

    keras.utils.set_random_seed(0)
    texts = [t.format(n) for t in TEMPLATES for n in NOUNS]
    texts = [
        f"{a[0].upper()}{a[1:]} {b[0].upper()}{b[1:]}"
        for a in texts
        for b in texts[::3]
    ]
    tokenizer = SentencePieceTokenizer(vocabulary_size=40, lowercase=True).fit(texts)
    model = SequenceTagger(
        tokenizer=tokenizer, tags=PUNCTUATION_TAGS, embedding_dim=16, units=16
    )
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    ids, tags = [], []
    for text in texts:  # what the recipe trains on: pieces and piece tags
        words, word_tags = punctuation_tags(text)
        pieces = word_piece_ids(tokenizer, words)
        ids.append([i for p in pieces for i in p])
        tags.append(piece_tags([len(p) for p in pieces], word_tags))
    width = max(map(len, ids))
    import numpy as np

    x = np.array([row + [0] * (width - len(row)) for row in ids], "int32")
    index = {t: i for i, t in enumerate(PUNCTUATION_TAGS)}
    y = np.array([[index[t] for t in row] + [0] * (width - len(row)) for row in tags])
    model.fit(x, y.astype("int32"), epochs=15, batch_size=16, verbose=0)

    folder = str(tmp_path / "punctuation_lite")
    export_model(model, folder, "tflite", batch_size=1, sequence_length=128)
    code = (
        card_example()
        .replace('folder = "punctuation_lite"', f"folder = {folder!r}")
        .replace(
            'print(punctuate("hi sarah can we talk about the budget on friday"))',
            f"import json\nprint(json.dumps([punctuate(t) for t in {TEXTS!r}]))",
        )
    )
    restored = run_without_keras(code)
    assert restored == model.restore_punctuation(TEXTS)
    assert restored[1] == "Why is it Sarah?"  # learned: not a copy of the input
