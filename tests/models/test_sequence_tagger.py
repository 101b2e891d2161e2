import keras
import numpy as np
import pytest

from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import WordTokenizer
from tests.task_test_utils import TASK_CHECKS, run_export_test, run_task_test

VOCAB = 20
TRIGGER_A, TRIGGER_B, MARKER = 3, 4, 5  # ids 6..19 are filler
OUTSIDE, TRIGGER, TAG_A, TAG_B = 0, 1, 2, 3


def distant_data(n, length, seed):
    """A marker's tag is the type (A or B) of a trigger at least 7 tokens away."""
    rng = np.random.default_rng(seed)
    x = rng.integers(6, VOCAB, size=(n, length)).astype("int32")
    y = np.full((n, length), OUTSIDE, "int32")
    kind = rng.integers(0, 2, size=n)
    rows = np.arange(n)
    trigger_at = rng.integers(0, 4, size=n)
    marker_at = rng.integers(length - 5, length, size=n)
    x[rows, trigger_at] = np.where(kind == 0, TRIGGER_A, TRIGGER_B)
    y[rows, trigger_at] = TRIGGER
    x[rows, marker_at] = MARKER
    y[rows, marker_at] = np.where(kind == 0, TAG_A, TAG_B)
    return x, y


def dense_tagger_on_distant_data(**kwargs):
    """A Dense-encoder tagger trained 2 epochs on `distant_data`, with its
    predicted tags on 300 new rows: `(tagger, x_test, y_test, predicted)`."""
    keras.utils.set_random_seed(0)
    tagger = SequenceTagger(
        vocabulary_size=VOCAB, num_tags=4, encoder="dense", units=32,
        embedding_dim=16, **kwargs,
    )  # fmt: skip
    tagger.compile(optimizer=keras.optimizers.Adam(0.02))
    x, y = distant_data(1024, 16, seed=0)
    tagger.fit(x, y, batch_size=32, epochs=2, verbose=0)
    x_test, y_test = distant_data(300, 16, seed=1)
    predicted = tagger.predict(x_test, verbose=0).argmax(-1)
    return tagger, x_test, y_test, predicted


def test_dense_encoder_tags_markers_from_a_distant_trigger():
    # A per-token Dense encoder sees no context: only the self-attention can
    # bring the trigger's type to the marker (chance on markers: 0.5).
    # Measured after 2 epochs: 1.0 over seeds 0-5 on every backend.
    _, x_test, y_test, predicted = dense_tagger_on_distant_data()
    markers = x_test == MARKER
    accuracy = np.mean(predicted[markers] == y_test[markers])
    print(f"marker accuracy {accuracy:.3f}")
    assert accuracy >= 0.9


def test_without_attention_a_dense_encoder_cannot_see_the_trigger(tmp_path):
    # score=None leaves h_i alone: the marker's tag depends on a token the
    # per-token encoder never sees, so markers stay at chance (0.5).
    tagger, x_test, y_test, predicted = dense_tagger_on_distant_data(score=None)
    markers = x_test == MARKER
    assert np.mean(predicted[markers] == y_test[markers]) < 0.7
    # Triggers are tagged from the token itself.
    triggers = (x_test == TRIGGER_A) | (x_test == TRIGGER_B)
    assert np.mean(predicted[triggers] == TRIGGER) > 0.95
    assert tagger.attention is None
    with pytest.raises(ValueError, match="has no attention weights"):
        tagger._attention_model()
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.score is None
    np.testing.assert_allclose(
        loaded.predict(x_test[:8], verbose=0), tagger.predict(x_test[:8], verbose=0),
        atol=1e-6,
    )  # fmt: skip


SENTENCES = [
    "the dog runs",
    "a cat sleeps",
    "the cat runs",
    "a dog sleeps",
    "the bird sings",
]
TAGS = [["DET", "NOUN", "VERB"]] * 5


def text_tagger(**kwargs):
    tokenizer = WordTokenizer().fit(SENTENCES)
    tagger = SequenceTagger(
        tokenizer=tokenizer,
        tags=["DET", "NOUN", "VERB"],
        units=8,
        embedding_dim=8,
        **kwargs,
    )
    tagger.compile(optimizer=keras.optimizers.Adam(0.05))
    return tagger


# Texts of different lengths for the shared checks, with their tags.
TEXTS = ["the dog runs", "a cat", "the bird sings", "cat"]
TEXT_TAGS = [
    ["DET", "NOUN", "VERB"],
    ["DET", "NOUN"],
    ["DET", "NOUN", "VERB"],
    ["NOUN"],
]


@pytest.fixture(scope="module")
def tagger():
    """The tagger fitted on SENTENCES, shared by the tests that only read it."""
    keras.utils.set_random_seed(1234)
    model = text_tagger(encoder="dense")
    model.fit(SENTENCES, TAGS, epochs=30, verbose=0)
    return model


@pytest.mark.parametrize("check", TASK_CHECKS)
def test_task_checks(tagger, check, tmp_path):
    run_task_test(
        tagger,
        TEXTS,
        check,
        targets=TEXT_TAGS,
        tmp_path=tmp_path,
        expected_output_shape=(4, 3, 3),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"encoder": "cnn", "kernel_size": 3},
        {"encoder": "dense", "score": "bahdanau"},
    ],
    ids=["birnn", "cnn", "dense_bahdanau"],
)
def test_padding_changes_neither_predictions_nor_loss(kwargs):
    # With tags written at the padded positions, which the loss leaves out.
    run_task_test(text_tagger(**kwargs), TEXTS, "padding", targets=TEXT_TAGS)


def test_cnn_encoder_keras_file_round_trip(tmp_path):
    tagger = text_tagger(encoder="cnn")
    run_task_test(tagger, TEXTS, "keras_file", targets=TEXT_TAGS, tmp_path=tmp_path)


@pytest.mark.slow  # a TensorFlow export (a subprocess under JAX and torch)
def test_export(tagger, tmp_path):
    run_export_test(tagger, TEXTS, tmp_path)


def test_learns_the_tags_and_reads_its_attention(tagger):
    assert tagger.tag("the bird runs") == [
        ("the", "DET"),
        ("bird", "NOUN"),
        ("runs", "VERB"),
    ]
    pairs = tagger.tag(["a dog", "the cat sleeps"])
    assert [t for t, _ in pairs[0]] == ["a", "dog"] and len(pairs[1]) == 3
    assert tagger.evaluate(SENTENCES, TAGS, verbose=0)[1] == 1.0

    tokens, weights = tagger.attention_weights("the dog runs")
    assert tokens == ["the", "dog", "runs"] and weights.shape == (3, 3)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)


def test_bad_input_is_named(tagger):
    # Token ids out of range, fractional or of the wrong rank, and x=None:
    # test_task_checks[bad_input].
    with pytest.raises(ValueError, match="no tokens"):
        tagger.tag("")
    with pytest.raises(ValueError, match="outside the tag set"):
        tagger.fit(["the dog runs"], [["DET", "NOUN", "ADV"]], verbose=0)
    with pytest.raises(ValueError, match="3 tokens but 2 tags"):
        tagger.fit(["the dog runs"], [["DET", "NOUN"]], verbose=0)
    with pytest.raises(ValueError, match=r"tag ids must lie in \[0, 3\)"):
        tagger.fit(np.array([[4, 5, 6]]), np.array([[0, 1, 3]]), verbose=0)
    # Unknown words only: a documented result, tagged as unknown tokens.
    pairs = tagger.tag("zebra gallops")
    assert [t for t, _ in pairs] == ["zebra", "gallops"]
    assert all(tag in ("DET", "NOUN", "VERB") for _, tag in pairs)
    with pytest.raises(ValueError, match="Received: encoder='lstm'"):
        SequenceTagger(vocabulary_size=VOCAB, num_tags=3, encoder="lstm")
    with pytest.raises(ValueError, match="without a tokenizer"):
        SequenceTagger(vocabulary_size=VOCAB, num_tags=3).tag("the dog")


def test_data_mistakes_get_one_clear_error():
    import warnings

    tf = pytest.importorskip("tensorflow")
    tagger = text_tagger(encoder="dense")
    with pytest.raises(ValueError, match=r"tags must be a list.*\['DET'\]"):
        tagger.fit(["the"], "DET", verbose=0)
    x = tagger.tokenizer.encode_batch(SENTENCES)
    unbatched = tf.data.Dataset.from_tensor_slices((x, np.zeros_like(x)))
    with pytest.raises(ValueError, match=r"not batched.*\.batch\(n\)"):
        tagger.fit(unbatched, verbose=0)
    losses = tagger.fit(unbatched.batch(2), verbose=0).history["loss"]
    assert np.isfinite(losses).all()

    short = text_tagger(encoder="dense", max_length=2)
    for expected in (1, 0):  # once per model
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(short.tag("the dog runs")) == 2
        cut = [w for w in caught if "max_length=2" in str(w.message)]
        assert len(cut) == expected


# --- Punctuation restoration ---------------------------------------------------------
NOUNS = ["dog", "cat", "car", "book"]
TEMPLATES = [
    "Where is the {}?",
    "The {} is here.",
    "Yes, the {} is red.",
    "Why is the {} red?",
]
HELD_OUT = {("cat", 3), ("book", 2)}


def test_restores_punctuation_and_capitals_it_learned():
    from keras_rnnattn.text import PUNCTUATION_TAGS, punctuation_tags

    keras.utils.set_random_seed(7)
    texts = [
        t.format(n)
        for i, t in enumerate(TEMPLATES)
        for n in NOUNS
        if (n, i) not in HELD_OUT
    ]
    pairs = [punctuation_tags(t) for t in texts]
    tokenizer = WordTokenizer(lowercase=True).fit([" ".join(w) for w, _ in pairs])
    model = SequenceTagger(
        tokenizer=tokenizer, tags=PUNCTUATION_TAGS, embedding_dim=16, units=16
    )
    model.compile(optimizer=keras.optimizers.Adam(0.03))
    model.fit(
        [" ".join(w) for w, _ in pairs] * 8, [t for _, t in pairs] * 8,
        epochs=12, batch_size=16, verbose=0,
    )  # fmt: skip
    # Sentences not trained on; the input may hold punctuation and capitals,
    # which are stripped first.
    held = [TEMPLATES[i].format(n) for n, i in sorted(HELD_OUT)]
    assert model.restore_punctuation([h.lower().rstrip("?.") for h in held]) == held
    assert model.restore_punctuation("WHY IS THE CAT RED") == "Why is the cat red?"
    # Emoji and symbols, which the tagger does not read, stay in their place.
    assert model.restore_punctuation("why is 🐈 the cat red 😀 €") == (
        "Why is 🐈 the cat red 😀 €?"
    )
    # Texts longer than a window (max_length words) are tagged in overlapping
    # windows, as a PunctuationStream tags them.
    from keras_rnnattn.models.punctuation_stream import PunctuationStream

    model.max_length = 4
    long_text = "where is the dog the dog is here"
    restored = model.restore_punctuation(long_text)
    stream = PunctuationStream(model)
    assert restored == stream.push(long_text) + stream.finish()
    assert restored.startswith("Where is the dog") and restored[-1] in ".?"


def test_restore_punctuation_needs_the_punctuation_tags(tagger):
    with pytest.raises(ValueError, match="tags must be PUNCTUATION_TAGS"):
        tagger.restore_punctuation("some text")


def test_restored_texts_are_whole_sentences():
    from keras_rnnattn.models.punctuation_stream import sentence_tags

    # The first word and each word after . or ? capitalised; a final full stop
    # where the tagger put a comma or nothing; upper case and marks kept.
    tags = ["lower_O", "lower_PERIOD", "lower_COMMA", "upper_QUESTION", "lower_COMMA"]
    assert sentence_tags(tags, True, True)[0] == [
        "title_O", "lower_PERIOD", "title_COMMA", "upper_QUESTION", "title_PERIOD"
    ]  # fmt: skip
    assert sentence_tags(["lower_QUESTION"], True, True)[0] == ["title_QUESTION"]
    assert sentence_tags([], True, True) == ([], True)
    # Mid-stream: no final full stop, and the next word's start is handed on.
    assert sentence_tags(["lower_O", "lower_PERIOD"], False, False) == (
        ["lower_O", "lower_PERIOD"],
        True,
    )
