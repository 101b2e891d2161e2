"""The shell that `TextTask` gives every application model."""

import doctest

import keras
import numpy as np
import pytest

from keras_rnnattn.models import (
    AttentionClassifier,
    AttentiveLanguageModel,
    SequenceTagger,
)
from keras_rnnattn.models import task as task_module
from keras_rnnattn.models.task import Endpoint, TextTask
from keras_rnnattn.presets.mixin import PresetMixin
from keras_rnnattn.text import CharTokenizer, WordTokenizer

TEXTS = ["a good film", "a bad film", "good good"]
TOKENIZER = WordTokenizer().fit(TEXTS)


def classifier(**kwargs):
    return AttentionClassifier(
        tokenizer=TOKENIZER, labels=["bad", "good"], embedding_dim=4, units=4, **kwargs
    )


def tagger():
    return SequenceTagger(
        tokenizer=TOKENIZER, tags=["O", "X"], embedding_dim=4, units=4
    )


def language_model():
    tokenizer = CharTokenizer().fit(TEXTS)
    return AttentiveLanguageModel(
        tokenizer=tokenizer, embedding_dim=4, units=4, max_length=16
    )


def test_the_docstring_examples_run():
    result = doctest.testmod(task_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_an_empty_list_of_texts_gives_empty_results():
    clf = classifier()
    labels, probabilities = clf.classify([])
    assert labels == [] and probabilities.shape == (0, 2)
    assert clf.explain([]) == []
    model = tagger()
    assert model.tag([]) == [] and model.attention_weights([]) == []
    lm = language_model()
    assert lm.generate([]) == []
    # A corpus-level score over no tokens has no value: one clear error.
    with pytest.raises(ValueError, match="perplexity: received an empty batch"):
        lm.perplexity([])


def test_no_samples_is_one_error_naming_the_caller():
    clf = classifier()
    clf.compile()
    for call, method in (
        (lambda: clf.fit([], []), "fit"),
        (lambda: clf.evaluate(np.zeros((0, 3), "int32"), []), "evaluate"),
        (lambda: clf.predict([]), "predict"),
    ):
        with pytest.raises(
            ValueError, match=rf"^AttentionClassifier\.{method}: received no samples"
        ):
            call()
    lm = language_model()
    with pytest.raises(ValueError, match=r"^AttentiveLanguageModel\.fit: received no"):
        lm.fit([])
    with pytest.raises(ValueError, match=r"^SequenceTagger\.evaluate: received no"):
        tagger().evaluate([], [])


def test_errors_name_the_class_of_the_model():
    class MyClassifier(AttentionClassifier):
        pass

    model = MyClassifier(vocabulary_size=10, num_classes=2, units=4)
    with pytest.raises(ValueError, match=r"^MyClassifier\.predict: token ids must"):
        model.predict(np.array([[1, 12]]))
    with pytest.raises(ValueError, match="MyClassifier needs `vocabulary_size`"):
        MyClassifier(num_classes=2)


def test_validation_data_is_read_as_the_training_data():
    clf = classifier()
    clf.compile()
    history = clf.fit(
        TEXTS,
        ["good", "bad", "good"],
        validation_data=(TEXTS[:2], ["good", "bad"]),
        verbose=0,
    )
    assert "val_loss" in history.history
    with pytest.raises(ValueError, match=r"fit \(validation_data\): labels outside"):
        clf.fit(TEXTS, ["good", "bad", "good"], validation_data=(TEXTS, ["?"] * 3))
    with pytest.raises(ValueError, match="texts alone have no targets"):
        clf.fit(TEXTS, ["good", "bad", "good"], validation_data=TEXTS)
    # A language model's targets are its texts: bare texts validate it.
    lm = language_model()
    lm.compile()
    history = lm.fit(TEXTS, validation_data=TEXTS[:2], verbose=0)
    assert "val_loss" in history.history


def test_functional_and_subclassed_tasks_share_the_base():
    # Keras rewrites a functional model's bases up to `keras.Model`; the base
    # must stay usable by subclassed (non-functional) models afterwards.
    class Functional(TextTask, keras.Model):
        def __init__(self):
            inputs = keras.Input((3,))
            super().__init__(inputs, keras.layers.Dense(2)(inputs))

    class Subclassed(TextTask, keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    Functional()
    assert TextTask.__bases__ == (PresetMixin,)
    assert keras.Model not in TextTask.__mro__
    out = Subclassed()(np.ones((1, 3), "float32"))
    assert tuple(out.shape) == (1, 2)


def test_default_export_endpoint_serves_the_probabilities():
    clf = classifier()
    (endpoint,) = clf.export_endpoints({"batch_size": None, "sequence_length": 5})
    assert isinstance(endpoint, Endpoint) and endpoint.name == "serving_default"
    assert endpoint.inputs == {"token_ids": ((None, 5), "int32")}
    ids = np.array([[4, 5, 6, 0, 0]], "int32")
    got = endpoint.fn(token_ids=ids)["probabilities"]
    expected = clf.predict(ids, verbose=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), expected, atol=1e-6)


def test_language_model_endpoints_step_like_next_fn():
    lm = language_model()
    assert AttentiveLanguageModel.next_logits is AttentiveLanguageModel.next_fn
    options = {
        "batch_size": 1,
        "sequence_length": 8,
        "max_length": None,
        "temperature": 1.0,
        "top_k": None,
        "top_p": None,
    }
    options = lm.check_export_options(options)
    assert options["max_length"] == 15  # max_length - 1: one is the begin token
    endpoints = {e.name: e for e in lm.export_endpoints(options)}
    assert sorted(endpoints) == ["decode_step", "sample"]
    step = endpoints["decode_step"]
    assert step.inputs["token_ids"] == ((1,), "int32")
    state = lm.initial_state(1)
    flat = task_module.flatten_state("state", state)
    assert sorted(step.inputs) == sorted(["token_ids", *flat])
    token = np.array([2], "int32")
    got = step.fn(token_ids=token, **flat)
    expected, _ = lm.next_fn(token, state)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(got["logits"]),
        keras.ops.convert_to_numpy(expected),
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="can be at most 15"):
        lm.check_export_options({**options, "max_length": 16})


def test_generate_ids_is_generate_in_ids():
    lm = language_model()
    prompt = [int(lm.tokenizer.bos_id)] + lm.tokenizer.encode("a g")
    tokens, scores = lm.generate_ids(np.array([prompt], "int32"), max_length=5)
    assert tokens.shape == (1, 5) and scores.shape == (1,)
    text = lm.generate("a g", max_new_tokens=5, temperature=0)
    row = tokens[0].tolist()
    eos = int(lm.tokenizer.eos_id)
    row = row[: row.index(eos)] if eos in row else row
    assert text == lm.tokenizer.decode(prompt[1:] + row)
    with pytest.raises(ValueError, match=r"generate_ids: `max_length` must be"):
        lm.generate_ids(np.array([prompt], "int32"), max_length=40)


def test_a_keras_file_restores_the_optimizer_as_it_was_saved(tmp_path, recwarn):
    # Compiled but not trained (a preset loaded with from_preset): the unbuilt
    # optimizer's state loads without Keras's "Skipping variable loading".
    model = classifier()
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    model.save(tmp_path / "fresh.keras")
    loaded = keras.saving.load_model(tmp_path / "fresh.keras")
    assert not [w for w in recwarn if "Skipping variable loading" in str(w.message)]
    assert not loaded.optimizer.built
    # Trained: the built optimizer's moments and step count come back.
    model.fit(["good", "bad"], ["good", "bad"], epochs=2, verbose=0)
    model.save(tmp_path / "trained.keras")
    loaded = keras.saving.load_model(tmp_path / "trained.keras")
    assert not [w for w in recwarn if "Skipping variable loading" in str(w.message)]
    assert int(loaded.optimizer.iterations.numpy()) == 2
    saved = [np.asarray(v) for v in model.optimizer.variables]
    restored = [np.asarray(v) for v in loaded.optimizer.variables]
    assert len(saved) == len(restored) > 2
    for a, b in zip(saved, restored):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's tf.function only"
)
def test_several_models_predicting_warn_of_no_retracing(caplog):
    # TensorFlow counts traces per Python code object: every model's Keras
    # predict function shared one, so a few presets in one process, each
    # tracing once per input shape, warned of "retracing" though none retraced.
    models = [
        AttentionClassifier.from_preset(name)
        for name in ("movie_snippets_sentiment", "wordnet_topics") * 3
    ]
    with caplog.at_level("WARNING", logger="tensorflow"):
        for model in models:  # two input shapes each
            model.predict(["a fine film", "a dog barks loudly at night"], verbose=0)
            model.predict(["a fine film"] * 40, verbose=0)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
    # Each model traced its own predict function: once per input shape at most.
    for model in models:
        assert model.predict_function.experimental_get_tracing_count() <= 2
