"""`SequenceTagger.restore_diacritics`: a character tagger learns where Czech
words take their marks, and restoring changes nothing but marks on letters."""

import keras
import numpy as np
import pytest

from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import CharTokenizer, diacritic_tags, strip_diacritics
from keras_rnnattn.text.diacritics import char_ids, model_text

WORDS = (
    "zítra ráno pojedu do brna kde je náměstí a kašna se sochou "
    "děkuji za zprávu ozvu večer máme hlad dáme si pizzu prosím "
    "pošlete fakturu pátku úplně jedno šťastný nový rok zdraví kůň"
).split()
TAGS = ["none", "acute", "caron", "ring_above"]


def sentences(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(3, 8))]
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        out.append(" ".join(words))
    return out


def arrays(tokenizer, texts, width=64):
    index = {t: i for i, t in enumerate(TAGS)}
    x = np.zeros((len(texts), width), "int32")
    y = np.zeros((len(texts), width), "int32")
    for row, text in enumerate(texts):
        stripped, tags = diacritic_tags(text)
        ids = char_ids(tokenizer, model_text(stripped))
        x[row, : len(ids)] = ids
        y[row, : len(tags)] = [index[t] for t in tags]
    return x, y


def train_tagger():
    """A small character tagger trained on `sentences` (seconds)."""
    keras.utils.set_random_seed(0)
    train = sentences(600, seed=0)
    tokenizer = CharTokenizer().fit([model_text(strip_diacritics(t)) for t in train])
    tagger = SequenceTagger(
        tokenizer=tokenizer, tags=TAGS, embedding_dim=16, units=32, cell="lstm",
        max_length=64,
    )  # fmt: skip
    tagger.compile(optimizer=keras.optimizers.Adam(0.01))
    x, y = arrays(tokenizer, train)
    tagger.fit(x, y, batch_size=32, epochs=6, verbose=0)
    return tagger


@pytest.fixture(scope="module")
def trained():
    return train_tagger()


def test_learns_which_letters_take_marks(trained):
    # Held-out sentences of the same words: each word restored whole.
    # Measured: 1.0 on every backend (an untrained tagger: about 0.2).
    held_out = sentences(60, seed=1)
    restored = trained.restore_diacritics([strip_diacritics(t) for t in held_out])
    words = [w for t in held_out for w in t.split()]
    got = [w for t in restored for w in t.split()]
    accuracy = np.mean([a == b for a, b in zip(words, got)])
    print(f"word accuracy {accuracy:.3f}")
    assert accuracy >= 0.9


def test_only_marks_on_letters_change(trained):
    texts = [
        "DEKUJI za zpravu!! 3x pizzu :-) ",  # capitals, digits, symbols kept
        "Zitra ráno",  # a mark the typist gave is kept
        "",
        "e\u0301 a decomposed mark",
    ]
    restored = trained.restore_diacritics(texts)
    for text, out in zip(texts, restored):
        assert len(out) == len(strip_diacritics(text))
        assert strip_diacritics(out) == strip_diacritics(text)
        for a, b in zip(strip_diacritics(text), out):
            assert a.isupper() == b.isupper()
    assert restored[1].endswith("ráno")
    assert restored[2] == ""
    assert restored[3][0] == "é"
    assert trained.restore_diacritics("zitra rano") == restored_single(trained)


def restored_single(tagger):
    return tagger.restore_diacritics(["zitra rano"])[0]


def test_texts_longer_than_a_window_are_restored_whole(trained):
    # 64 characters a window: a 40-word text is cut at spaces into windows.
    text = " ".join(sentences(1, seed=2)[0] for _ in range(8))
    long = strip_diacritics(text)
    assert len(long) > 2 * trained.max_length
    out = trained.restore_diacritics(long)
    assert strip_diacritics(out) == long
    words = text.split()
    assert np.mean([a == b for a, b in zip(words, out.split())]) >= 0.9


def test_restore_diacritics_needs_diacritic_tags():
    tok = CharTokenizer().fit(["ab"])
    tagger = SequenceTagger(tokenizer=tok, tags=["O", "B"], units=4)
    with pytest.raises(ValueError, match="diacritic tags"):
        tagger.restore_diacritics("ab")
