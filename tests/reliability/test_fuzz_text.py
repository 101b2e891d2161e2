"""Fuzzing the text APIs: any string gives a result or a clear ValueError, no crash."""

import os
import traceback

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from keras_rnnattn.models import (
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
    Translator,
)
from keras_rnnattn.text import BpeTokenizer, CharTokenizer, WordTokenizer
from keras_rnnattn.text.kept_symbols import split_symbols
from keras_rnnattn.text.unknown_words import source_words

CORPUS = [
    "the cat sat on the mat.",
    "a dog ran, the cat slept!",
    "über die straße gehen 3.5 km",
    "ein hund und eine katze",
]
TARGET_CORPUS = ["the cat", "a dog", "one mat"]
LABELS = ["neg", "pos"]
TAGS = ["O", "N", "V"]
MAX_SOURCE = 12  # Translator: source tokens, end token included
MAX_TOKENS = 10  # classifier and tagger: texts are cut to this many tokens
LM_POSITIONS = 12  # language model: begin token + prompt + generated tokens


def fuzz_settings(max_examples):
    """Deterministic, bounded hypothesis settings (the same examples on every run)."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


# --- Texts ---------------------------------------------------------------------------
KNOWN = sorted(set("".join(CORPUS)))
ARBITRARY = st.text(max_size=24)  # any code point but surrogates
COMBINING = st.text(
    st.sampled_from("aeou") | st.characters(categories=["Mn", "Me"]), max_size=12
)
RTL = st.text(
    st.characters(min_codepoint=0x0590, max_codepoint=0x06FF)
    | st.sampled_from(" \u200e\u200f\u202b\u202e\u2067\u2069"),
    max_size=16,
)
EMOJI = st.text(
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF)
    | st.sampled_from("\u200d\ufe0f\U0001f3fb a"),
    max_size=12,
)
CONTROL = st.text(
    st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"]) | st.just("\x00"),
    max_size=12,
)
SPECIAL = st.sampled_from(
    ["", " ", "\t\n\r", "\x00", "\x00cat\x00", "\u3000", "\ufeff", "\u200b", "<unk>"]
)
LONG = st.builds(
    lambda piece, times: piece * times,
    st.text(st.sampled_from(KNOWN + ["é", "🙂", "\x00", "\u0301"]), min_size=1),
    st.integers(min_value=40, max_value=400),
)
TEXTS = st.one_of(ARBITRARY, COMBINING, RTL, EMOJI, CONTROL, SPECIAL, LONG)


def result_or_clear_error(fn, *args, **kwargs):
    """`(result, None)`, or `(None, message)` for a ValueError raised by the library.

    Any other exception, or a ValueError raised inside a backend or NumPy
    rather than by keras_rnnattn's own checks, fails the test.
    """
    try:
        return fn(*args, **kwargs), None
    except ValueError as error:
        origin = traceback.extract_tb(error.__traceback__)[-1].filename
        assert f"{os.sep}keras_rnnattn{os.sep}" in origin, (
            f"ValueError from {origin}, not from the library's checks: {error}"
        )
        message = str(error)
        assert 20 < len(message) < 2000, message
        return None, message


# --- Tiny untrained models, built once per module -------------------------------------
@pytest.fixture(scope="module")
def tokenizers():
    return {
        "word": WordTokenizer().fit(CORPUS),
        "char": CharTokenizer().fit(CORPUS),
        "bpe": BpeTokenizer(max_vocab=60).fit(CORPUS),
    }


@pytest.fixture(scope="module")
def translator(tokenizers):
    keras.utils.set_random_seed(0)
    return Translator(
        tokenizers["char"],
        WordTokenizer().fit(TARGET_CORPUS),
        embedding_dim=4,
        units=8,
        max_source_length=MAX_SOURCE,
        max_target_length=6,
    )


@pytest.fixture(scope="module")
def classifier(tokenizers):
    keras.utils.set_random_seed(0)
    return AttentionClassifier(
        tokenizer=tokenizers["word"],
        labels=LABELS,
        embedding_dim=4,
        units=4,
        max_length=MAX_TOKENS,
    )


@pytest.fixture(scope="module")
def tagger(tokenizers):
    keras.utils.set_random_seed(0)
    return SequenceTagger(
        tokenizer=tokenizers["bpe"],
        tags=TAGS,
        embedding_dim=4,
        units=4,
        max_length=MAX_TOKENS,
    )


@pytest.fixture(scope="module")
def language_model(tokenizers):
    keras.utils.set_random_seed(0)
    return AttentiveLanguageModel(
        tokenizer=tokenizers["char"], embedding_dim=4, units=8, max_length=LM_POSITIONS
    )


# --- Models -------------------------------------------------------------------------
@fuzz_settings(max_examples=16)
@given(text=TEXTS)
def test_translate_any_text(translator, text):
    # Symbols the source vocabulary cannot read (emoji) leave the model's input
    # and come back in the translation (keras_rnnattn.text.kept_symbols).
    reduced, symbols = split_symbols(translator.source_tokenizer, text)
    tokens = translator.source_tokenizer.encode(reduced)
    result, error = result_or_clear_error(translator.translate, text, max_length=4)
    if not reduced.strip() or not tokens:
        event("blank")
        # Blank texts give an empty translation; symbols alone come back.
        assert result == " ".join(symbol for symbol, _ in symbols)
    elif len(tokens) + 1 > MAX_SOURCE:
        event("too long")
        assert "max_source_length=12" in error and "shorten" in error
    else:
        event("translated")
        assert isinstance(result, str)
        # Target tokens, or source words copied for unknown ones (Luong et
        # al.), and the symbols put back.
        vocabulary = set(translator.target_tokenizer.vocabulary.tokens)
        vocabulary |= set(source_words(translator.source_tokenizer, reduced))
        vocabulary |= {symbol for symbol, _ in symbols}
        words = result.split()
        assert len(words) <= 4 + len(symbols) and set(words) <= vocabulary


@fuzz_settings(max_examples=16)
@given(texts=st.lists(TEXTS, min_size=1, max_size=3))
def test_classify_any_texts(classifier, texts):
    labels, error = result_or_clear_error(classifier.classify, texts)
    empty = [i for i, t in enumerate(texts) if not classifier.tokenizer.encode(t)]
    event("refused" if empty else "classified")
    if empty:
        assert f"texts[{empty[0]}] has no tokens" in error
        return
    labels, probabilities = labels
    assert len(labels) == len(texts) and set(labels) <= set(LABELS)
    assert probabilities.shape == (len(texts), 2)
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    # predict on the same texts gives the same probabilities.
    np.testing.assert_allclose(
        classifier.predict(texts, verbose=0), probabilities, atol=1e-6
    )


@fuzz_settings(max_examples=15)
@given(data=st.lists(st.binary(max_size=12), min_size=1, max_size=2))
def test_classify_bytes_are_utf8_or_a_clear_error(classifier, data):
    result, error = result_or_clear_error(classifier.classify, data)
    try:
        texts = [item.decode("utf-8") for item in data]
    except UnicodeDecodeError:
        assert "UTF-8" in error and "texts[" in error
        return
    if any(not classifier.tokenizer.encode(t) for t in texts):
        assert "has no tokens" in error
    else:
        assert len(result[0]) == len(data)


@fuzz_settings(max_examples=20)
@given(text=TEXTS)
def test_tag_any_text(tagger, text):
    result, error = result_or_clear_error(tagger.tag, text)
    tokens = tagger.tokenizer.encode(text)
    event("refused" if not tokens else "tagged")
    if not tokens:
        assert "texts[0] has no tokens" in error
        return
    assert len(result) == min(len(tokens), MAX_TOKENS)
    for token, tag in result:
        assert isinstance(token, str) and tag in TAGS


@fuzz_settings(max_examples=6)
@given(prompt=TEXTS)
@example(prompt="the cat sat on the mat")  # longer than the model's positions
@example(prompt="")
def test_generate_any_prompt(language_model, prompt):
    tok = language_model.tokenizer
    ids = tok.encode(prompt)
    result, error = result_or_clear_error(
        language_model.generate, prompt, temperature=0.0
    )
    event("too long" if len(ids) + 1 > LM_POSITIONS else "generated")
    if len(ids) + 1 > LM_POSITIONS:
        assert "shorten the prompt" in error
        return
    assert isinstance(result, str)
    assert result.startswith(tok.decode(ids))  # the prompt, then new characters
    assert len(result) <= len(tok.decode(ids)) + (LM_POSITIONS - len(ids)) * 5


# --- Tokenizers ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["word", "char", "bpe"])
@fuzz_settings(max_examples=60)
@given(text=TEXTS)
def test_tokenizers_on_any_text(tokenizers, name, text):
    tok = tokenizers[name]
    tokens = tok.tokenize(text)
    ids = tok.encode(text, add_bos=True, add_eos=True)
    assert all(isinstance(t, str) and t for t in tokens)
    assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id
    assert len(ids) == len(tokens) + 2
    assert all(isinstance(i, int) and 0 <= i < tok.vocabulary_size for i in ids)
    decoded = tok.decode(ids)
    assert isinstance(decoded, str)
    if name == "char":
        # Characters round-trip exactly; unknown ones come back as "<unk>".
        known = set(tok.vocabulary.tokens)
        expected = "".join(c if c in known else "<unk>" for c in tok.normalize(text))
        assert decoded == expected
    batch = tok.encode_batch([text, "cat"], max_length=6, add_eos=True)
    assert batch.shape == (2, 6) and batch.dtype == np.int32
    row = ids[1:-1][:5] + [tok.eos_id]
    np.testing.assert_array_equal(batch[0, : len(row)], row)


@pytest.mark.parametrize("name", ["word", "char", "bpe"])
@fuzz_settings(max_examples=40)
@given(ids=st.lists(st.integers(min_value=-3, max_value=80), max_size=12))
def test_decode_any_ids(tokenizers, name, ids):
    tok = tokenizers[name]
    result, error = result_or_clear_error(tok.decode, ids, skip_special=False)
    if all(0 <= i < tok.vocabulary_size for i in ids):
        assert isinstance(result, str)
    else:
        assert "out of range" in error and "Received: token_id=" in error


@pytest.mark.parametrize("name", ["word", "char", "bpe"])
def test_lone_surrogates_and_non_strings(tokenizers, name):
    tok = tokenizers[name]
    ids = tok.encode("cat \ud800 \udfff")
    assert all(0 <= i < tok.vocabulary_size for i in ids)
    for bad in (None, 3, b"cat", ["cat"]):
        _, error = result_or_clear_error(tok.encode, bad)
        assert "Expected a str" in error


NOT_TEXT = [
    None,
    3,
    2.5,
    {"a": 1},
    [None],
    ["cat", 7],
    [b"\xff\xfe"],
    [["a", "b"], ["c"]],
]


@pytest.mark.parametrize("bad", NOT_TEXT, ids=repr)
def test_inputs_that_are_not_text_are_refused_clearly(
    translator, classifier, tagger, language_model, bad
):
    calls = {
        "translate": translator.translate,
        "classify": classifier.classify,
        "predict": lambda x: classifier.predict(x, verbose=0),
        "tag": tagger.tag,
        "generate": language_model.generate,
    }
    for name, call in calls.items():
        if name == "predict" and isinstance(bad, (int, float, dict)):
            continue  # not a batch at all: Keras's own ValueError names the type
        _, error = result_or_clear_error(call, bad)
        assert error is not None, f"{name} accepted {bad!r}"


def test_text_containers_are_read_alike(translator, classifier):
    texts = ["the cat", "a dog"]
    for same in (tuple(texts), np.array(texts), [t.encode("utf-8") for t in texts]):
        assert translator.translate(same) == translator.translate(texts)
        np.testing.assert_allclose(
            classifier.classify(same)[1], classifier.classify(texts)[1], atol=1e-6
        )
    assert translator.translate([]) == []
    assert translator.translate(b"the cat") == translator.translate("the cat")
