"""init_from (a preset's weights into a model of the same network, clear errors
otherwise), average_weights (against a NumPy mean), CallBudget and the
training history's records."""

import doctest
import importlib
import time

import keras
import numpy as np
import pytest

from keras_rnnattn.models import Translator
from keras_rnnattn.presets import load_preset
from keras_rnnattn.text import CharTokenizer
from keras_rnnattn.training import (
    CallBudget,
    average_weights,
    call_record,
    init_from,
    training_history,
)
from keras_rnnattn.training import averaging as averaging_module
from keras_rnnattn.training import call_budget as call_budget_module
from keras_rnnattn.training import history as history_module
from keras_rnnattn.training import schedules as schedules_module

WORDS = ["abc", "abd", "bcd", "dca", "cab", "bad"]


def translator(seed, units=6, words=WORDS):
    keras.utils.set_random_seed(seed)
    return Translator(
        CharTokenizer().fit(words),
        CharTokenizer().fit(words),
        embedding_dim=4,
        units=units,
        max_source_length=6,
        max_target_length=6,
    )


def test_init_from_copies_every_weight_and_predicts_alike(tmp_path):
    trained = translator(1)
    folder = trained.save_to_preset(str(tmp_path / "preset"))
    fresh = translator(2)
    assert not np.array_equal(fresh.get_weights()[0], trained.get_weights()[0])
    metadata = init_from(fresh, folder)
    assert metadata["class_name"] == "Translator"
    for got, expected in zip(fresh.get_weights(), trained.get_weights()):
        np.testing.assert_array_equal(got, expected)
    assert fresh.translate(WORDS) == trained.translate(WORDS)


def test_init_from_names_the_variable_and_shapes_that_differ(tmp_path):
    folder = translator(1).save_to_preset(str(tmp_path / "preset"))
    with pytest.raises(
        ValueError, match=r"has the shape \(4, 24\); the preset .* has \(4, 18\) there"
    ):
        init_from(translator(1, units=8), folder)


def test_init_from_refuses_other_tokenizers(tmp_path):
    folder = translator(1).save_to_preset(str(tmp_path / "preset"))
    # Same shapes (six letters each), other letters: ids would mean other tokens.
    other = translator(1, words=["uvw", "xyz"])
    with pytest.raises(
        ValueError, match="source_tokenizer differs.*preset's tokenizers"
    ):
        init_from(other, folder)


def test_init_from_extends_a_vocabulary_with_new_rows_kept_fresh(tmp_path):
    trained = translator(1)
    folder = trained.save_to_preset(str(tmp_path / "preset"))
    # The preset's target ids, then two new symbols (as the British G2P's).
    target = CharTokenizer().fit(WORDS)
    config = target.get_config()
    config["vocabulary"]["tokens"] = config["vocabulary"]["tokens"] + ["x", "y"]
    target = CharTokenizer.from_config(config)
    keras.utils.set_random_seed(2)
    grown = Translator(
        CharTokenizer().fit(WORDS),
        target,
        embedding_dim=4,
        units=6,
        max_source_length=6,
        max_target_length=6,
    )
    fresh = [np.array(w) for w in grown.get_weights()]
    with pytest.raises(ValueError, match="extend_vocabulary=True"):
        init_from(grown, folder)
    init_from(grown, folder, extend_vocabulary=True)
    pairs = zip(grown.get_weights(), trained.get_weights(), fresh)
    larger = 0
    for got, preset, initial in pairs:
        lead = tuple(slice(0, n) for n in preset.shape)
        np.testing.assert_array_equal(got[lead], preset)
        if got.shape != preset.shape:  # the new tokens keep their initial values
            larger += 1
            rest = np.ones(got.shape, bool)
            rest[lead] = False
            np.testing.assert_array_equal(got[rest], initial[rest])
    assert larger >= 3  # target embedding, output kernel and bias
    # Tokens the preset does not know are an error still, even with the option.
    with pytest.raises(ValueError, match="source_tokenizer differs"):
        init_from(translator(1, words=["uvw", "xyz"]), folder, extend_vocabulary=True)


def test_average_weights_is_the_numpy_mean_of_files_folders_and_models(tmp_path):
    models = [translator(seed) for seed in (1, 2, 3)]
    expected = [np.mean(ws, axis=0) for ws in zip(*(m.get_weights() for m in models))]
    models[0].save_weights(str(tmp_path / "a.weights.h5"))
    folder = models[1].save_to_preset(str(tmp_path / "b"))
    models[2].save(str(tmp_path / "c.keras"))
    template = translator(9)
    kept = template.get_weights()
    got = average_weights(
        [str(tmp_path / "a.weights.h5"), folder, str(tmp_path / "c.keras")],
        template=template,
    )
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    for a, b in zip(template.get_weights(), kept):  # the template is left as it was
        np.testing.assert_array_equal(a, b)
    # A preset saved from the average loads and predicts as the average does.
    template.set_weights(got)
    loaded = load_preset(template.save_to_preset(str(tmp_path / "average")))
    assert loaded.translate(WORDS) == template.translate(WORDS)


def test_average_weights_errors_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        average_weights([])
    translator(1).save_weights(str(tmp_path / "a.weights.h5"))
    with pytest.raises(ValueError, match="template="):
        average_weights([str(tmp_path / "a.weights.h5")])
    with pytest.raises(ValueError, match="another network"):
        average_weights([translator(1), translator(1, units=8)])


def test_call_budget_stops_at_an_epoch_end_when_the_next_would_not_fit():
    class Slow(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            time.sleep(0.6)

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    budget = CallBudget(minutes=1.5 / 60)  # 1.5 s: one epoch of 0.6 s fits, not 3
    history = model.fit(
        np.ones((4, 1)),
        np.ones((4, 1)),
        epochs=10,
        verbose=0,
        callbacks=[Slow(), budget],
    )
    assert budget.stopped and len(history.history["loss"]) in (1, 2)
    with pytest.raises(ValueError, match="minutes"):
        CallBudget(0)


def test_a_preset_without_a_history_gets_one_from_its_metrics():
    old = {"metrics": {"train_seconds": 3004.7, "epochs_run": 5, "best_val_loss": 0.19}}
    (record,) = training_history(old)
    assert record["minutes"] == 50.1 and record["epochs"] == [1, 5]
    new = {"metrics": {"training_history": [call_record("fresh", 60, (1, 2), 0.5)]}}
    assert training_history(new)[0]["minutes"] == 1.0
    assert training_history({"metrics": {}}) == []


@pytest.mark.parametrize(
    "module",
    [
        averaging_module,
        call_budget_module,
        history_module,
        importlib.import_module("keras_rnnattn.training.warm_start"),
        schedules_module,
    ],
)
def test_docstring_examples(module):
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
