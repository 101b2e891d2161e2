"""Presets as starting points: a new head from `from_preset`, compiled models."""

import keras
import numpy as np
import pytest

from keras_rnnattn.models import AttentionClassifier, SequenceTagger
from tests.backends import on_one_backend
from tests.models.test_sequence_tagger import TEXT_TAGS, TEXTS, text_tagger

SENTIMENT = "movie_snippets_sentiment"
LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(autouse=True)
def _seed():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield


def test_a_new_head_keeps_every_other_weight():
    preset = AttentionClassifier.from_preset(SENTIMENT, compile=False)
    assert not preset.compiled
    for override in ({"num_classes": 3}, {"labels": LABELS}):
        model = AttentionClassifier.from_preset(SENTIMENT, **override)
        assert model.num_classes == 3
        assert model.labels == override.get("labels")
        for layer in model.layers:
            weights = layer.get_weights()
            if not weights:
                continue
            old = preset.get_layer(layer.name).get_weights()
            if layer.name == "output_dense":
                assert weights[0].shape == (old[0].shape[0], 3)
                assert not np.any(weights[1])  # fresh: zero bias
            else:
                for a, b in zip(weights, old, strict=True):
                    np.testing.assert_array_equal(a, b)
    # The same number of labels, other names: a fresh head all the same.
    renamed = AttentionClassifier.from_preset(SENTIMENT, labels=["bad", "good"])
    kernel = renamed.get_layer("output_dense").get_weights()[0]
    assert not np.allclose(kernel, preset.get_layer("output_dense").get_weights()[0])
    # Compiled with its defaults: fit works at once, and keeps working after
    # loading without a head change.
    assert renamed.compiled
    renamed.fit(["a fine film", "a dull film"], ["good", "bad"], epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"`num_classes` \(3\) must equal"):
        AttentionClassifier.from_preset(SENTIMENT, num_classes=3, labels=["a", "b"])


def test_a_tagger_preset_takes_new_tags(tmp_path):
    tagger = text_tagger()
    tagger.fit(TEXTS, TEXT_TAGS, epochs=2, verbose=0)
    folder = tagger.save_to_preset(tmp_path / "tagger")
    model = SequenceTagger.from_preset(folder, tags=["D", "N", "V", "X"])
    assert model.num_tags == 4 and model.tags == ["D", "N", "V", "X"]
    np.testing.assert_array_equal(
        model.get_layer("encoder").get_weights()[0],
        tagger.get_layer("encoder").get_weights()[0],
    )
    model.fit(TEXTS[:1], [["D", "N", "X"]], epochs=1, verbose=0)


# A three-class task whose test sentences use sentiment words that the
# fine-tuning sentences never show: only the preset's encoder knows them.
POS_TRAIN = ["great", "wonderful", "brilliant", "funny", "beautiful", "fine"]
NEG_TRAIN = ["dull", "boring", "awful", "terrible", "bad", "stupid"]
POS_TEST = ["gorgeous", "witty", "superb", "delightful", "charming", "smart"]
NEG_TEST = ["tedious", "tired", "lame", "mediocre", "pointless", "clumsy"]
OPINIONS = [
    "the movie is {}",
    "a {} film",
    "the acting is {}",
    "what a {} story",
    "it is {} and long",
    "the script is {}",
]
FACTS = [
    "the film was shot in {}",
    "the movie opens in {}",
    "the story is set in {}",
    "it was released in {}",
]
PLACES_TRAIN = ["paris", "london", "texas", "june", "china", "rome"]
PLACES_TEST = ["france", "new york", "spain", "africa", "march", "italy"]


def three_classes(positive, negative, places):
    texts, labels = [], []
    for template in OPINIONS:
        for word in positive:
            texts.append(template.format(word))
            labels.append("positive")
        for word in negative:
            texts.append(template.format(word))
            labels.append("negative")
    for template in FACTS:
        for place in places:
            texts.append(template.format(place))
            labels.append("neutral")
    return texts, labels


def fine_tuning_accuracies(seed=0):
    train = three_classes(POS_TRAIN, NEG_TRAIN, PLACES_TRAIN)
    test_texts, test_labels = three_classes(POS_TEST, NEG_TEST, PLACES_TEST)
    accuracies = {}
    for start in ("preset", "scratch"):
        keras.utils.set_random_seed(seed)
        model = AttentionClassifier.from_preset(SENTIMENT, labels=LABELS)
        if start == "scratch":  # the same model and tokenizer, weights drawn anew
            model = AttentionClassifier.from_config(model.get_config())
            model.compile()
        model.fit(*train, epochs=3, batch_size=16, verbose=0)
        predicted, _ = model.classify(test_texts)
        accuracies[start] = float(np.mean(np.array(predicted) == test_labels))
    return accuracies


# Measured (3 epochs of batch 16, seeds 0-2): preset 0.89-0.90 on torch and
# 0.86-0.93 on JAX, scratch 0.49-0.68 and 0.61-0.66. The learning is the same on every backend; the slow suite runs
# it on each.
@on_one_backend
def test_fine_tuning_the_sentiment_preset_beats_training_from_scratch():
    accuracies = fine_tuning_accuracies()
    print(accuracies)
    assert accuracies["preset"] >= 0.8
    assert accuracies["preset"] - accuracies["scratch"] >= 0.15


@pytest.mark.slow
def test_fine_tuning_beats_training_from_scratch_on_every_backend():
    accuracies = fine_tuning_accuracies()
    assert accuracies["preset"] >= 0.8
    assert accuracies["preset"] - accuracies["scratch"] >= 0.15
