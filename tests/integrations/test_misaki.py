"""MisakiFallback keeps misaki's fallback contract, batches and caches."""

import pytest

from keras_rnnattn.integrations.misaki import MisakiFallback
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer
from tests.backends import on_one_backend

# The fallback's own logic (cache, batching, folding) is plain Python around
# `Translator.translate`, which the model tests check on every backend.
pytestmark = on_one_backend

token_module = pytest.importorskip(
    "misaki.token",
    reason="misaki is not installed: pip install '.[misaki]'",
)

WORDS = ["cat", "cab", "tab", "bat", "act"]
PHONEMES = ["kˈæt", "kˈæb", "tˈæb", "bˈæt", "ˈækt"]


class CountingTranslator(Translator):
    """A Translator that counts its searches and the rows they carry."""

    calls = 0
    words = 0

    def generate_ids(self, source_ids, *args, **kwargs):
        type(self).calls += 1
        type(self).words += len(source_ids)
        return super().generate_ids(source_ids, *args, **kwargs)


@pytest.fixture(scope="module")
def trained():
    """A tiny G2P model that has learned the five words."""
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    source = CharTokenizer().fit(WORDS)
    target = CharTokenizer().fit(PHONEMES)
    model = CountingTranslator(source, target, embedding_dim=16, units=32)
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    model.fit(*model.encode_pairs(WORDS, PHONEMES), epochs=150, batch_size=5, verbose=0)
    return model


@pytest.fixture
def model(trained):
    CountingTranslator.calls = CountingTranslator.words = 0
    return trained


def token(text):
    return token_module.MToken(text=text, tag="NN", whitespace=" ")


def test_returns_the_models_phonemes_with_a_rating_below_the_lexicons(model):
    fallback = MisakiFallback(model=model, warm=False)
    assert [fallback(token(w)) for w in WORDS] == [(p, 2) for p in PHONEMES]
    assert MisakiFallback(model=model, rating=1, warm=False)(token("act")) == (
        "ˈækt",
        1,
    )


def test_a_sentence_of_unknown_words_costs_one_model_call(model):
    fallback = MisakiFallback(model=model, warm=False)
    assert fallback.prime(["cat cab, tab. bat act"]) == 5
    assert CountingTranslator.calls == 1
    results = [fallback(token(w)) for w in WORDS]
    assert CountingTranslator.calls == 1  # every word came from the cache
    assert [r[0] for r in results] == [fallback.cache[w] for w in WORDS]
    assert fallback.prime("cat cab") == 0  # nothing new to pronounce


def test_folds_letters_it_was_not_trained_on(model):
    fallback = MisakiFallback(model=model, warm=False)
    assert fallback.spelling("cät") == "cat"
    assert fallback.spelling("bäb") == "bab"
    # A word the model cannot read at all gets misaki's "unknown".
    assert fallback(token("🍕")) == (None, None)
    assert fallback(token("xyz")) == (None, None)
    # The folded spelling is pronounced like the plain one, in one call.
    assert fallback(token("cät"))[0] == fallback(token("cat"))[0]


def test_bad_arguments_name_the_fix(model):
    with pytest.raises(ValueError, match="Translator"):
        MisakiFallback(model=object())
    with pytest.raises(ValueError, match="rating"):
        MisakiFallback(model=model, rating="2")
    with pytest.raises(ValueError, match="MToken"):
        MisakiFallback(model=model, warm=False)("cat")
