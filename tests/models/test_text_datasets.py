"""Strings into `fit`, `evaluate` and `predict`: lists, arrays and `tf.data`.

A dataset of texts is tokenized in the input pipeline, batch by batch, by the
code that reads the same texts as a list: every check compares the two.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.models.test_attention_classifier import CORPUS, LABELS, text_classifier
from tests.models.test_attentive_language_model import TEXTS as LM_TEXTS
from tests.models.test_attentive_language_model import char_model
from tests.models.test_sequence_tagger import TEXT_TAGS, TEXTS, text_tagger
from tests.models.test_translator import SOURCES, TARGETS, tiny


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield


def strings(values):
    return tf.constant([str(v) for v in values])


def test_classifier_reads_datasets_of_strings_as_lists():
    clf = text_classifier()
    want = clf.predict(CORPUS, verbose=0)
    # Batched texts alone, batched (text, label string) pairs, one per element.
    texts = tf.data.Dataset.from_tensor_slices(strings(CORPUS))
    for ds in (texts.batch(4), texts):
        np.testing.assert_allclose(clf.predict(ds, verbose=0), want, atol=1e-5)
    pairs = tf.data.Dataset.from_tensor_slices((strings(CORPUS), strings(LABELS)))
    want_eval = clf.evaluate(CORPUS, LABELS, batch_size=4, verbose=0)
    got_eval = clf.evaluate(pairs.batch(4), verbose=0)
    np.testing.assert_allclose(got_eval, want_eval, atol=1e-5)
    index = {"neg": 0, "pos": 1}
    ids = tf.data.Dataset.from_tensor_slices(
        (strings(CORPUS), tf.constant([index[label] for label in LABELS]))
    )
    np.testing.assert_allclose(
        clf.evaluate(ids.batch(4), verbose=0), want_eval, atol=1e-5
    )
    # An array of strings reads as the list does.
    np.testing.assert_allclose(
        clf.predict(np.array(CORPUS), verbose=0), want, atol=1e-5
    )


def test_unbatched_pairs_train_in_length_buckets_and_learn():
    clf = text_classifier()
    pairs = tf.data.Dataset.from_tensor_slices((strings(CORPUS), strings(LABELS)))
    before = clf.evaluate(CORPUS, LABELS, verbose=0)[0]
    history = clf.fit(
        pairs.repeat(4).shuffle(24, seed=0),
        batch_size=4,
        epochs=6,
        validation_data=pairs.batch(6),
        verbose=0,
    )
    assert history.history["val_loss"][-1] < before
    assert clf.evaluate(CORPUS, LABELS, verbose=0)[1] == 1.0


def test_unbatched_texts_batch_by_length_into_a_known_number_of_batches():
    # Keras ends each epoch at the dataset's number of batches; unknown, it reads
    # until the data runs out and warns "Your input ran out of data".
    from keras_rnnattn.models._text_datasets import POOL_BATCHES, _batch

    words = [" ".join(["w"] * n) for n in np.random.default_rng(0).integers(1, 40, 75)]
    dataset = tf.data.Dataset.from_tensor_slices((strings(words), strings(words)))
    batches = _batch(dataset, 4, bucketed=True)
    assert int(batches.cardinality()) == 19 == len(list(batches))  # ceil(75 / 4)
    lengths = [[len(t.split()) for t in x.numpy().astype(str)] for x, _ in batches]
    assert sorted(n for batch in lengths for n in batch) == sorted(
        len(w.split()) for w in words
    )  # every text once
    pool = POOL_BATCHES
    for start in range(0, len(lengths), pool):  # sorted within each pool
        flat = [n for batch in lengths[start : start + pool] for n in batch]
        assert flat == sorted(flat)


def test_fitting_an_unbatched_dataset_warns_nothing(recwarn):
    clf = text_classifier()
    pairs = tf.data.Dataset.from_tensor_slices((strings(CORPUS), strings(LABELS)))
    clf.fit(pairs.shuffle(4, seed=0), batch_size=2, epochs=2, verbose=0)
    clf.fit(pairs.batch(3), epochs=1, verbose=0)
    messages = [str(w.message) for w in recwarn]
    assert not [m for m in messages if "ran out of data" in m or "shuffle" in m]


def test_a_generator_dataset_streams():
    # A dataset from a generator is read as it goes, not into memory first.
    read = []

    def texts():
        for i in range(100_000):
            read.append(i)
            yield CORPUS[i % len(CORPUS)], LABELS[i % len(LABELS)]

    spec = (tf.TensorSpec((), tf.string), tf.TensorSpec((), tf.string))
    dataset = tf.data.Dataset.from_generator(texts, output_signature=spec)
    clf = text_classifier()
    clf.fit(dataset.batch(8), steps_per_epoch=5, epochs=1, verbose=0)
    assert 40 <= len(read) < 2_000


def test_tagger_reads_datasets_of_texts_and_tag_strings():
    tagger = text_tagger()
    want_probs = tagger.predict(TEXTS, verbose=0)
    texts = tf.data.Dataset.from_tensor_slices(strings(TEXTS))
    got = tagger.predict(texts.batch(2), verbose=0)
    # Each batch is padded to its own length (here up to 8 positions).
    for row, (text, tags) in enumerate(zip(TEXTS, TEXT_TAGS, strict=True)):
        np.testing.assert_allclose(
            got[row, : len(tags)], want_probs[row, : len(tags)], atol=1e-5, err_msg=text
        )
    tag_strings = strings(" ".join(tags) for tags in TEXT_TAGS)
    pairs = tf.data.Dataset.from_tensor_slices((strings(TEXTS), tag_strings))
    np.testing.assert_allclose(
        tagger.evaluate(pairs.batch(4), verbose=0),
        tagger.evaluate(TEXTS, TEXT_TAGS, batch_size=4, verbose=0),
        atol=1e-5,
    )


def test_language_model_reads_a_dataset_of_texts():
    lm = char_model()
    texts = tf.data.Dataset.from_tensor_slices(strings(LM_TEXTS))
    np.testing.assert_allclose(
        lm.evaluate(texts.batch(3), verbose=0),
        lm.evaluate(LM_TEXTS, batch_size=3, verbose=0),
        atol=1e-5,
    )
    lm.fit(texts, batch_size=2, epochs=1, verbose=0)  # unbatched: bucketed


def test_translator_fits_on_texts_and_datasets_of_pairs():
    model = tiny()
    model.compile()
    x, y = model.encode_pairs(SOURCES[:16], TARGETS[:16])
    want = model.evaluate(x, y, batch_size=8, verbose=0)
    assert np.allclose(
        model.evaluate(SOURCES[:16], TARGETS[:16], batch_size=8, verbose=0), want
    )
    pairs = tf.data.Dataset.from_tensor_slices(
        (strings(SOURCES[:16]), strings(TARGETS[:16]))
    )
    np.testing.assert_allclose(
        model.evaluate(pairs.batch(8), verbose=0), want, atol=1e-5
    )
    # fit on lists takes the same steps as fit on encode_pairs' arrays.
    twin = tiny()
    twin.set_weights(model.get_weights())
    for m, data in ((model, (SOURCES[:16], TARGETS[:16])), (twin, (x, y))):
        m.compile(optimizer=keras.optimizers.SGD(0.5))
        m.fit(*data, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), twin.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    model.fit(pairs.repeat(2), batch_size=8, epochs=1, verbose=0)  # bucketed


def test_wrong_inputs_get_one_clear_error():
    clf = text_classifier()
    floats = tf.data.Dataset.from_tensor_slices(tf.zeros((4, 3))).batch(2)
    with pytest.raises(ValueError, match="AttentionClassifier.predict.*token ids"):
        clf.predict(floats, verbose=0)
    ragged = tf.data.Dataset.from_tensor_slices(
        (strings(TEXTS), tf.ragged.constant(TEXT_TAGS))
    )
    with pytest.raises(ValueError, match="targets must be one tensor"):
        text_tagger().fit(ragged.batch(2), verbose=0)
    matrix = tf.data.Dataset.from_tensor_slices(tf.constant([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match=r"texts must be strings, one per element"):
        clf.predict(matrix.batch(2), verbose=0)
    pairs = tf.data.Dataset.from_tensor_slices((strings(CORPUS), strings(LABELS)))
    with pytest.raises(ValueError, match="pass y=None"):
        clf.fit(pairs.batch(2), LABELS, verbose=0)
    model = tiny()
    with pytest.raises(ValueError, match="need their target texts"):
        model.fit(SOURCES[:4], verbose=0)
    with pytest.raises(ValueError, match="4 source texts but 3 target texts"):
        model.fit(SOURCES[:4], TARGETS[:3], verbose=0)
