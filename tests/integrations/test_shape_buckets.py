"""shape_buckets: a Translator's words at a few fixed shapes give what
`translate` gives, and no other shape reaches the model; MisakiFallback
primes only the words misaki's own lexicon lacks."""

import keras
import pytest

from keras_rnnattn.integrations import shape_buckets
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer
from tests.backends import on_one_backend

WORDS = ["a", "ab", "abc", "cab", "bad", "dab", "abcd" * 3, "dcba" * 5, "b" * 30]


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(2)
    tokenizer = CharTokenizer().fit(["abcd"])
    return Translator(
        tokenizer,
        tokenizer,
        embedding_dim=4,
        units=8,
        max_source_length=40,
        max_target_length=40,
    )


def test_bucketed_outputs_equal_translate_at_few_shapes(model, monkeypatch):
    counts = (1, 2, 5, len(WORDS))
    expected = [model.translate(WORDS[:count]) for count in counts]
    beams = [model.translate(WORDS[:3], beam_size=3)]
    shapes = []
    generate = model.generate_ids
    monkeypatch.setattr(
        model,
        "generate_ids",
        lambda ids, *a, **kw: shapes.append(ids.shape) or generate(ids, *a, **kw),
    )
    assert shape_buckets.warm_up(model) == 4
    for count, want in zip(counts, expected):
        assert shape_buckets.bucketed_translate(model, WORDS[:count]) == want
    got = shape_buckets.bucketed_translate(model, WORDS[:3], beam_size=3)
    assert [got] == beams
    assert set(shapes) == {(1, 16), (16, 16), (1, 40), (16, 40)}


@on_one_backend  # misaki's lexicon and the cache: the same on every backend
def test_prime_asks_the_model_only_for_what_misakis_lexicon_lacks():
    en = pytest.importorskip("misaki.en", reason="pip install misaki")
    from keras_rnnattn.integrations.misaki import MisakiFallback

    lexicon = en.Lexicon(british=False)
    keras.utils.set_random_seed(2)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    tokenizer = CharTokenizer().fit([letters])
    model = Translator(tokenizer, tokenizer, embedding_dim=4, units=4)
    fallback = MisakiFallback(model=model, warm=False)
    text = "The cat sat with Glorptastic and Zibberwock"
    assert fallback.prime([text], lexicon=lexicon) == 2
    assert set(fallback.cache) == {"Glorptastic", "Zibberwock"}
