"""Presets: round trips, safe mode, damaged files, lookup and listing."""

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

from keras_rnnattn import presets
from keras_rnnattn.presets import catalog as preset_catalog
from keras_rnnattn.presets import files as preset_files
from keras_rnnattn.presets.error import PresetError
from keras_rnnattn.presets.mixin import PresetMixin
from tests.backends import next_backend
from tests.preset_test_models import (
    FEATURES,
    TinyClassifier,
    TinyModel,
    TinySubclassed,
    TinyTranslator,
    fitted_tokenizer,
    trained,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def features(n=6, seed=3):
    return np.random.default_rng(seed).normal(size=(n, FEATURES)).astype("float32")


def weights_of(model):
    return [np.asarray(keras.ops.convert_to_numpy(w)) for w in model.weights]


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, data):
    """Writes a JSON file; one in a preset folder is re-recorded in its
    metadata.json, as an edit made on purpose (the test's) would be."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    folder, name = os.path.split(str(path))
    metadata_file = os.path.join(folder, "metadata.json")
    if name != "metadata.json" and os.path.isfile(metadata_file):
        metadata = read_json(metadata_file)
        if name in metadata.get("files", {}):
            metadata["files"][name] = preset_files.file_facts(str(path))
            write_json(metadata_file, metadata)


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(presets.PRESETS_ENV, raising=False)


@pytest.fixture(scope="module")
def trained_classifier(tmp_path_factory):
    """A classifier trained once per module (it has optimizer state) and its preset."""
    keras.utils.set_random_seed(7)
    model = trained(TinyClassifier(tokenizer=fitted_tokenizer()))
    path = model.save_to_preset(
        tmp_path_factory.mktemp("master") / "clf",
        {"description": "tiny classifier", "metrics": {"accuracy": np.float32(0.75)}},
    )
    return model, path


@pytest.fixture
def classifier_preset(trained_classifier, tmp_path):
    """The trained classifier and a fresh copy of its preset, free to damage."""
    model, master = trained_classifier
    return model, str(shutil.copytree(master, tmp_path / "clf"))


# --- Round trips ---------------------------------------------------------------------
def test_round_trip_functional_model_gives_identical_values(classifier_preset):
    model, path = classifier_preset
    loaded = TinyClassifier.from_preset(path)
    assert type(loaded) is TinyClassifier
    for saved, restored in zip(weights_of(model), weights_of(loaded)):
        np.testing.assert_array_equal(saved, restored)
    np.testing.assert_array_equal(
        loaded.predict(features(), verbose=0), model.predict(features(), verbose=0)
    )
    assert loaded.labels == ["neg", "pos"]
    assert loaded.tokenizer.encode("a film") == model.tokenizer.encode("a film")
    assert (
        loaded.classify(["a gorgeous movie"])[0]
        == model.classify(["a gorgeous movie"])[0]
    )


def test_round_trip_subclassed_model_is_built_from_its_build_config(tmp_path):
    model = TinySubclassed()
    model(features())  # creates the variables
    path = model.save_to_preset(tmp_path / "sub")
    assert "build_config" in read_json(os.path.join(path, "config.json"))
    loaded = TinySubclassed.from_preset(path)
    np.testing.assert_array_equal(
        loaded.predict(features(), verbose=0), model.predict(features(), verbose=0)
    )


def test_preset_files_config_and_no_optimizer_state(classifier_preset):
    model, path = classifier_preset
    assert sorted(os.listdir(path)) == [
        "config.json",
        "metadata.json",
        "model.weights.h5",
        "tokenizer.json",
    ]
    config = read_json(os.path.join(path, "config.json"))
    assert config == {
        k: v
        for k, v in json.loads(
            json.dumps(keras.saving.serialize_keras_object(model))
        ).items()
        if k != "compile_config"
    }
    assert model.optimizer is not None and model.optimizer.variables
    with h5py.File(os.path.join(path, "model.weights.h5"), "r") as f:
        groups = []
        f.visit(groups.append)
    assert not [g for g in groups if g.startswith("optimizer")]
    tokenizer = read_json(os.path.join(path, "tokenizer.json"))
    assert tokenizer["class_name"] == "CharTokenizer"
    assert tokenizer["config"] == model.tokenizer.get_config()


def test_float16_weights_take_half_the_bytes_and_load_back_as_float32(
    classifier_preset, tmp_path
):
    model, path = classifier_preset
    half = model.save_to_preset(tmp_path / "half", weights_dtype="float16")
    assert read_json(os.path.join(half, "metadata.json"))["weights_dtype"] == "float16"

    def arrays(folder):
        found = []
        with h5py.File(os.path.join(folder, "model.weights.h5"), "r") as f:
            f.visititems(
                lambda name, item: (
                    found.append((name, item.dtype, item.nbytes))
                    if isinstance(item, h5py.Dataset)
                    else None
                )
            )
        return found

    full, halved = arrays(path), arrays(half)
    assert [name for name, _, _ in halved] == [name for name, _, _ in full]
    assert full and all(dtype == np.float32 for _, dtype, _ in full)
    assert all(dtype == np.float16 for _, dtype, _ in halved)
    assert [n for _, _, n in halved] == [n // 2 for _, _, n in full]
    loaded = presets.load_preset(half)
    for saved, restored in zip(weights_of(model), weights_of(loaded)):
        assert restored.dtype == saved.dtype == np.float32
        np.testing.assert_array_equal(
            restored, saved.astype("float16").astype("float32")
        )
    # Written again in float16, nothing changes.
    again = presets.load_preset(
        loaded.save_to_preset(tmp_path / "again", weights_dtype="float16")
    )
    for a, b in zip(weights_of(loaded), weights_of(again)):
        np.testing.assert_array_equal(a, b)


def test_unknown_weights_dtype_is_refused(classifier_preset, tmp_path):
    model, _ = classifier_preset
    with pytest.raises(ValueError, match="weights_dtype"):
        model.save_to_preset(tmp_path / "bf", weights_dtype="bfloat16")


def test_weights_beyond_float16_are_refused(tmp_path):
    model = TinyModel()
    model.weights[0].assign(np.full(model.weights[0].shape, 1e6, "float32"))
    with pytest.raises(ValueError, match="beyond float16's range"):
        model.save_to_preset(tmp_path / "big", weights_dtype="float16")
    assert not os.path.exists(tmp_path / "big" / "model.weights.h5.partial")


def test_metadata_merges_given_and_automatic_fields(classifier_preset):
    model, path = classifier_preset
    metadata = read_json(os.path.join(path, "metadata.json"))
    assert metadata["description"] == "tiny classifier"
    assert metadata["metrics"] == {"accuracy": 0.75}  # NumPy number written as JSON
    assert metadata["class_name"] == "TinyClassifier"
    assert metadata["registered_name"] == "keras_rnnattn_tests>TinyClassifier"
    assert metadata["parameter_count"] == model.count_params() == 4 * 8 + 8 + 8 * 2 + 2
    assert metadata["backend"] == keras.backend.backend()
    assert metadata["keras_version"] == keras.__version__
    assert metadata["format_version"] == 1
    assert "weights_dtype" not in metadata  # stored as the variables are
    age = datetime.datetime.now(
        datetime.timezone.utc
    ) - datetime.datetime.fromisoformat(metadata["date"])
    assert datetime.timedelta(0) <= age < datetime.timedelta(minutes=5)
    for name in ("config.json", "model.weights.h5", "tokenizer.json"):
        with open(os.path.join(path, name), "rb") as f:
            data = f.read()
        assert metadata["files"][name] == {
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }


def test_metadata_must_be_plain_json(tmp_path):
    model = TinyModel()
    with pytest.raises(ValueError, match="plain JSON"):
        model.save_to_preset(tmp_path / "p", {"description": object()})
    with pytest.raises(ValueError, match="dict"):
        model.save_to_preset(tmp_path / "p", ["not", "a", "dict"])


def test_saving_an_unregistered_class_says_to_register_it(tmp_path):
    class Unregistered(TinyModel):
        pass

    with pytest.raises(ValueError, match="register_keras_serializable"):
        Unregistered().save_to_preset(tmp_path / "p")
    assert not os.path.exists(tmp_path / "p")


def test_saving_an_unbuilt_model_says_to_build_it(tmp_path):
    with pytest.raises(ValueError, match="not built"):
        TinySubclassed().save_to_preset(tmp_path / "p")


def test_config_overrides_reach_the_constructor(classifier_preset):
    _, path = classifier_preset
    loaded = TinyClassifier.from_preset(path, name="renamed", trainable=False)
    assert loaded.name == "renamed"
    assert not loaded.trainable


def test_generic_base_and_subclasses_load(classifier_preset):
    model, path = classifier_preset
    assert type(PresetMixin.from_preset(path)) is TinyClassifier
    assert type(TinyModel.from_preset(path)) is TinyClassifier  # a subclass
    assert type(presets.load_preset(path)) is TinyClassifier


def test_plain_keras_models_are_presets_too(tmp_path):
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(3)])
    path = presets.save_preset(model, tmp_path / "seq")
    loaded = presets.load_preset(path)
    np.testing.assert_array_equal(
        loaded.predict(features(), verbose=0), model.predict(features(), verbose=0)
    )


# --- Refusals --------------------------------------------------------------------------
def test_preset_of_another_class_is_refused_before_building(classifier_preset):
    _, path = classifier_preset
    with pytest.raises(
        PresetError, match="class TinyClassifier, which is not TinyTranslator"
    ):
        TinyTranslator.from_preset(path)


def test_tampered_class_name_is_refused(classifier_preset):
    _, path = classifier_preset
    config_file = os.path.join(path, "config.json")
    config = read_json(config_file)
    # Renamed to another registered class: refused as not a TinyClassifier.
    config["registered_name"] = "keras_rnnattn_tests>TinyTranslator"
    config["class_name"] = "TinyTranslator"
    write_json(config_file, config)
    with pytest.raises(
        PresetError, match="class TinyTranslator, which is not TinyClassifier"
    ):
        TinyClassifier.from_preset(path)


def test_unknown_class_is_refused_with_a_short_message(classifier_preset):
    _, path = classifier_preset
    config_file = os.path.join(path, "config.json")
    config = read_json(config_file)
    config["registered_name"] = "keras_rnnattn_tests>NoSuchModel"
    config["class_name"] = "NoSuchModel"
    write_json(config_file, config)
    with pytest.raises(PresetError, match="NoSuchModel") as info:
        presets.load_preset(path)
    assert str(config_file) in str(info.value)
    assert "vocabulary" not in str(info.value)  # the config is not dumped
    assert len(str(info.value)) < 1200


def test_a_config_naming_arbitrary_code_runs_nothing(tmp_path, monkeypatch):
    model = TinyModel()
    path = model.save_to_preset(tmp_path / "p")
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    for module, name in (("os", "system"), ("builtins", "eval"), ("subprocess", "run")):
        write_json(
            os.path.join(path, "config.json"),
            {
                "module": module,
                "class_name": name,
                "config": {},
                "registered_name": name,
            },
        )
        with pytest.raises(PresetError, match=name):
            presets.load_preset(path)
    assert calls == []


def test_lambda_is_refused_even_with_unsafe_deserialization_enabled(tmp_path):
    from keras.src.backend.common import global_state

    inputs = keras.Input((FEATURES,))
    model = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2.0)(inputs))
    path = presets.save_preset(model, tmp_path / "lambda")
    assert "__lambda__" in json.dumps(read_json(os.path.join(path, "config.json")))
    with pytest.raises(PresetError, match="lambda"):
        presets.load_preset(path)
    keras.config.enable_unsafe_deserialization()
    try:
        with pytest.raises(PresetError, match="lambda"):
            presets.load_preset(path)
    finally:
        global_state.set_global_attribute("safe_mode_saving", None)


def test_model_that_is_not_built_after_loading_is_reported(tmp_path):
    model = TinySubclassed()
    model(features())
    path = model.save_to_preset(tmp_path / "sub")
    config = read_json(os.path.join(path, "config.json"))
    del config["build_config"]
    write_json(os.path.join(path, "config.json"), config)
    with pytest.raises(PresetError, match="not built after deserialisation"):
        TinySubclassed.from_preset(path)


# --- Damaged or missing files ------------------------------------------------------------
def test_truncated_weights_file_is_named(classifier_preset):
    _, path = classifier_preset
    weights = os.path.join(path, "model.weights.h5")
    with open(weights, "rb") as f:
        data = f.read()
    with open(weights, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(PresetError, match="truncated or corrupt") as info:
        TinyClassifier.from_preset(path)
    assert weights in str(info.value)

    # Without the recorded size and checksum, h5py's failure is reported, named.
    metadata = read_json(os.path.join(path, "metadata.json"))
    del metadata["files"]
    write_json(os.path.join(path, "metadata.json"), metadata)
    with pytest.raises(PresetError) as info:
        TinyClassifier.from_preset(path)
    assert str(info.value).startswith(f"Could not load the weights file {weights}")
    assert info.value.__suppress_context__  # one clear error, not h5py's traceback


def test_weights_changed_in_place_fail_the_checksum(classifier_preset):
    _, path = classifier_preset
    weights = os.path.join(path, "model.weights.h5")
    with open(weights, "r+b") as f:
        f.seek(os.path.getsize(weights) - 64)
        f.write(b"\xff" * 8)
    with pytest.raises(PresetError, match="SHA-256") as info:
        TinyClassifier.from_preset(path)
    assert weights in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "changed"])
def test_every_recorded_file_is_checked(tmp_path, damage):
    # A shipped preset's tokenizer.json, which TFLite users read too: metadata.json
    # records its size and SHA-256, and a damaged copy is refused before loading.
    path = str(
        shutil.copytree(
            os.path.join(REPO, "saved_models", "movie_snippets_sentiment"),
            tmp_path / "p",
        )
    )
    tokenizer = os.path.join(path, "tokenizer.json")
    with open(tokenizer, "rb") as f:
        data = f.read()
    data = data[: len(data) // 2] if damage == "truncated" else data.replace(b"a", b"e")
    with open(tokenizer, "wb") as f:
        f.write(data)
    expected = "truncated, corrupt or was replaced"
    with pytest.raises(PresetError, match=expected) as info:
        presets.load_preset(path)
    assert str(info.value).startswith(tokenizer)
    assert ("bytes" in str(info.value)) == (damage == "truncated")


@pytest.mark.filterwarnings("ignore:Skipping nested container")
def test_weights_of_another_architecture_are_named(tmp_path):
    path = TinyModel(units=2).save_to_preset(tmp_path / "p")
    TinyModel(units=5).save_weights(os.path.join(tmp_path, "other.weights.h5"))
    shutil.copy(os.path.join(tmp_path, "other.weights.h5"), f"{path}/model.weights.h5")
    os.remove(os.path.join(path, "metadata.json"))
    with pytest.raises(PresetError, match="Could not load the weights file"):
        TinyModel.from_preset(path)


def test_weights_without_a_checksum_load_with_one_warning(classifier_preset):
    import warnings

    def unchecked_warnings():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = TinyClassifier.from_preset(path)
        messages = [str(w.message) for w in caught]
        return loaded, [m for m in messages if "loaded unchecked" in m]

    model, path = classifier_preset
    assert unchecked_warnings()[1] == []  # a preset with its checksums
    os.remove(os.path.join(path, "metadata.json"))
    loaded, (message,) = unchecked_warnings()
    assert "no SHA-256" in message and path in message
    for saved, restored in zip(weights_of(model), weights_of(loaded)):
        np.testing.assert_array_equal(saved, restored)
    assert unchecked_warnings()[1] == []  # once per folder


def test_git_lfs_pointer_says_to_pull(classifier_preset):
    _, path = classifier_preset
    with open(os.path.join(path, "model.weights.h5"), "w") as f:
        f.write("version https://git-lfs.github.com/spec/v1\noid sha256:abc\n")
    with pytest.raises(PresetError, match="git lfs pull"):
        TinyClassifier.from_preset(path)


@pytest.mark.parametrize(
    "missing, message",
    [
        ("config.json", "has no config.json"),
        ("model.weights.h5", "has no model.weights.h5"),
    ],
)
def test_missing_files_are_named(classifier_preset, missing, message):
    _, path = classifier_preset
    os.remove(os.path.join(path, missing))
    with pytest.raises(PresetError, match=message):
        TinyClassifier.from_preset(path)


def test_corrupt_config_json_is_named(classifier_preset):
    _, path = classifier_preset
    with open(os.path.join(path, "config.json"), "w") as f:
        f.write('{"class_name": "TinyClass')
    with pytest.raises(PresetError, match="config.json is not valid JSON"):
        TinyClassifier.from_preset(path)


# --- Names, lookup and listing ------------------------------------------------------------
@pytest.fixture
def env_presets(tmp_path, monkeypatch):
    root = tmp_path / "presets"
    TinyClassifier(tokenizer=fitted_tokenizer()).save_to_preset(
        root / "tiny_clf", {"description": "classifies", "metrics": {"accuracy": 0.5}}
    )
    TinyTranslator().save_to_preset(root / "tiny_tr", {"description": "translates"})
    os.makedirs(root / "not_a_preset")  # no config.json: not listed
    monkeypatch.setenv(presets.PRESETS_ENV, str(root))
    return root


def test_names_resolve_through_the_environment_variable(env_presets):
    model = TinyClassifier.from_preset("tiny_clf")
    assert type(model) is TinyClassifier
    assert presets.find_preset("tiny_tr") == str(env_presets / "tiny_tr")


def test_unknown_name_lists_the_available_presets(env_presets):
    with pytest.raises(PresetError) as info:
        TinyClassifier.from_preset("tiny_clff")
    message = str(info.value)
    assert message.startswith("Unknown preset 'tiny_clff'.")
    assert "tiny_clf (TinyClassifier)" in message
    assert "tiny_tr (TinyTranslator)" in message
    assert str(env_presets) in message
    assert presets.PRESETS_ENV in message


def test_unknown_name_marks_missing_folders_of_the_variable(env_presets, monkeypatch):
    missing = os.path.abspath("/no/such/presets")
    monkeypatch.setenv(
        presets.PRESETS_ENV, os.pathsep.join([str(env_presets), missing])
    )
    with pytest.raises(PresetError, match=r"/no/such/presets \(missing\)"):
        presets.find_preset("nothing_here")


def test_missing_path_is_reported_as_a_path(env_presets, tmp_path):
    with pytest.raises(PresetError, match="No preset folder at"):
        presets.find_preset(str(tmp_path / "nowhere"))
    with pytest.raises(PresetError, match="Unsupported preset handle"):
        presets.find_preset("gs://bucket/model")


def test_list_presets_reads_only_metadata(env_presets, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("list_presets must not build models")

    monkeypatch.setattr(keras.saving, "deserialize_keras_object", fail)
    # A preset with broken weights and config is still listed from its metadata.
    with open(env_presets / "tiny_tr" / "model.weights.h5", "wb") as f:
        f.write(b"garbage")
    listed = presets.list_presets()
    assert list(listed)[:2] == ["tiny_clf", "tiny_tr"]  # the variable's folder first
    clf = listed["tiny_clf"]
    assert clf["description"] == "classifies"
    assert clf["class_name"] == "TinyClassifier"
    assert clf["registered_name"] == "keras_rnnattn_tests>TinyClassifier"
    assert clf["parameter_count"] == TinyClassifier().count_params()
    assert clf["metrics"] == {"accuracy": 0.5}
    assert clf["path"] == str(env_presets / "tiny_clf")
    assert "not_a_preset" not in listed


def test_list_presets_survives_broken_metadata(env_presets):
    with open(env_presets / "tiny_tr" / "metadata.json", "w") as f:
        f.write("{broken")
    listed = presets.list_presets()
    assert "not valid JSON" in listed["tiny_tr"]["error"]
    assert listed["tiny_clf"]["description"] == "classifies"


def test_preset_metadata_and_length_penalty_by_name_or_folder(env_presets):
    metadata = presets.preset_metadata("tiny_clf")
    assert metadata["description"] == "classifies"
    assert metadata["metrics"] == {"accuracy": 0.5}
    assert presets.preset_metadata(env_presets / "tiny_tr") == presets.preset_metadata(
        "tiny_tr"
    )
    assert presets.preset_length_penalty("tiny_clf") == 0.0  # none recorded
    TinyTranslator().save_to_preset(
        env_presets / "tiny_tr_alpha", {"search": {"length_penalty": 1.2}}
    )
    assert presets.preset_length_penalty("tiny_tr_alpha") == 1.2
    os.remove(env_presets / "tiny_tr" / "metadata.json")
    assert presets.preset_metadata("tiny_tr") == {}
    with open(env_presets / "tiny_clf" / "metadata.json", "w") as f:
        f.write("[1, 2]")
    with pytest.raises(PresetError, match="must hold a JSON object"):
        presets.preset_metadata("tiny_clf")
    with pytest.raises(PresetError, match="Unknown preset 'tiny_cl'"):
        presets.preset_metadata("tiny_cl")


def test_class_list_presets_keeps_its_own_class(env_presets):
    assert "tiny_clf" in TinyClassifier.list_presets()
    assert "tiny_tr" not in TinyClassifier.list_presets()
    assert {"tiny_clf", "tiny_tr"} <= set(TinyModel.list_presets())
    assert {"tiny_clf", "tiny_tr"} <= set(PresetMixin.list_presets())


def test_installed_layout_is_found_without_a_checkout(tmp_path, monkeypatch, no_env):
    """After `pip install .`: site-packages/keras_rnnattn/_saved_models/<name>."""
    site = tmp_path / "site-packages"
    package = site / "keras_rnnattn"
    TinyClassifier().save_to_preset(package / "_saved_models" / "installed_clf")
    # A stray top-level saved_models/ in site-packages is not ours: ignored.
    TinyClassifier().save_to_preset(site / "saved_models" / "stray")
    monkeypatch.setattr(preset_catalog, "_PACKAGE_DIR", str(package))
    assert presets.preset_dirs() == [str(package / "_saved_models")]
    assert list(presets.list_presets()) == ["installed_clf"]
    assert type(TinyClassifier.from_preset("installed_clf")) is TinyClassifier


def test_checkout_layout_and_search_order(tmp_path, monkeypatch, no_env):
    """A checkout (pyproject.toml beside the package) reads saved_models/; the
    environment variable comes first, then the checkout, then the package."""
    checkout = tmp_path / "checkout"
    package = checkout / "keras_rnnattn"
    os.makedirs(package)
    (checkout / "pyproject.toml").write_text("[project]\n")
    TinyClassifier().save_to_preset(checkout / "saved_models" / "shared")
    TinyTranslator().save_to_preset(package / "_saved_models" / "shared")
    TinyTranslator().save_to_preset(package / "_saved_models" / "only_installed")
    monkeypatch.setattr(preset_catalog, "_PACKAGE_DIR", str(package))
    assert presets.preset_dirs() == [
        str(checkout / "saved_models"),
        str(package / "_saved_models"),
    ]
    assert presets.list_presets()["shared"]["class_name"] == "TinyClassifier"
    assert presets.find_preset("only_installed").startswith(str(package))

    extra = tmp_path / "extra"
    TinyTranslator().save_to_preset(extra / "shared")
    monkeypatch.setenv(presets.PRESETS_ENV, os.pathsep.join([str(extra), "/no/such"]))
    assert presets.preset_dirs()[0] == str(extra)
    assert presets.find_preset("shared") == str(extra / "shared")
    assert type(presets.load_preset("shared")) is TinyTranslator


def test_repository_checkout_is_searched(no_env):
    assert os.path.join(REPO, "saved_models") in preset_catalog._candidate_dirs()


# --- Packaging and the shipped presets ------------------------------------------------------
def test_pyproject_lists_every_package_and_maps_saved_models():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    on_disk = sorted(
        os.path.relpath(root, REPO).replace(os.sep, ".")
        for root, _, files in os.walk(os.path.join(REPO, "keras_rnnattn"))
        if "__init__.py" in files
    )
    assert "packages" in setuptools, (
        "pyproject.toml must list the packages under [tool.setuptools] and map "
        "saved_models/ to keras_rnnattn._saved_models (see keras_rnnattn/presets/saving.py)"
    )
    listed = setuptools["packages"]
    assert sorted(p for p in listed if p != "keras_rnnattn._saved_models") == on_disk
    assert setuptools["package-dir"]["keras_rnnattn._saved_models"] == "saved_models"
    assert setuptools["package-data"]["keras_rnnattn._saved_models"] == ["**/*"]


@pytest.mark.slow
def test_wheel_installs_saved_models_inside_the_package(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "out"
        ),
    )
    shutil.rmtree(source / "saved_models", ignore_errors=True)
    TinyClassifier().save_to_preset(source / "saved_models" / "wheel_clf")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        + ["-q", "-w", str(tmp_path / "wheel"), str(source)],
        check=True,
        timeout=600,
    )
    import zipfile

    (wheel,) = os.listdir(tmp_path / "wheel")
    with zipfile.ZipFile(tmp_path / "wheel" / wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    for name in ("config.json", "model.weights.h5", "metadata.json"):
        assert f"keras_rnnattn/_saved_models/wheel_clf/{name}" in names
    assert not [n for n in names if n.startswith("saved_models/")]
    # The installed package finds it by name, with no checkout around it.
    code = (
        "import tests.preset_test_models, keras_rnnattn.presets as p; "
        "assert p.list_presets()['wheel_clf']['class_name'] == 'TinyClassifier'; "
        "print(type(p.load_preset('wheel_clf')).__name__)"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), REPO]))
    env.pop(presets.PRESETS_ENV, None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("TinyClassifier")


SHIPPED = sorted(
    name
    for name in (
        os.listdir(os.path.join(REPO, "saved_models"))
        if os.path.isdir(os.path.join(REPO, "saved_models"))
        else []
    )
    if os.path.isfile(os.path.join(REPO, "saved_models", name, "config.json"))
)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_preset_is_complete_and_small(name):
    path = os.path.join(REPO, "saved_models", name)
    metadata = read_json(os.path.join(path, "metadata.json"))
    for key in ("description", "data", "data_license", "command", "metrics", "date"):
        assert metadata.get(key), f"{name}/metadata.json needs a non-empty {key!r}"
    assert isinstance(metadata["parameter_count"], int)
    total = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    assert total < presets.MAX_PRESET_MB * 2**20, f"{name} is {total / 2**20:.1f} MB"
    preset_files.check_preset_files(path, metadata)  # every file as recorded


# The presets in the wheel are a closed set (docs/guides/presets.md, "Which presets ship
# in the wheel"): further ones are published on a hub and loaded by handle.
WHEEL_PRESETS_MB = 64


def test_the_presets_in_the_wheel_stay_under_their_total():
    folder = os.path.join(REPO, "saved_models")
    total = sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, files in os.walk(folder)
        for name in files
    )
    assert total < WHEEL_PRESETS_MB * 2**20, (
        f"saved_models/ is {total / 2**20:.1f} MB, over the {WHEEL_PRESETS_MB} MB "
        "the wheel ships: publish the new preset on the Hugging Face Hub or Kaggle "
        "(docs/guides/presets.md, Sharing a preset) instead of adding it to saved_models/"
    )


# --- Across backends ------------------------------------------------------------------------
LOAD_SCRIPT = """
import sys
import numpy as np
import tests.preset_test_models as models
loaded = models.TinyClassifier.from_preset(sys.argv[1])
np.save(sys.argv[3], loaded.predict(np.load(sys.argv[2]), verbose=0))
"""


def test_preset_saved_here_loads_on_the_next_backend(classifier_preset, tmp_path):
    other = next_backend()
    model, path = classifier_preset
    np.save(tmp_path / "x.npy", features())
    env = dict(os.environ, KERAS_BACKEND=other, PYTHONPATH=REPO)
    subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, path]
        + [str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        check=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "y.npy"), model.predict(features(), verbose=0), atol=1e-6
    )


def test_a_presets_search_settings_are_the_models_defaults(tmp_path):
    # Kept in metadata.json (`search`) by `save_to_preset`, read back by
    # `from_preset`: the beam's penalty without passing it again.
    from keras_rnnattn.decoding.search_settings import SearchSettings
    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer

    tok = CharTokenizer().fit(["abcd"])
    model = Translator(tok, tok, embedding_dim=4, units=4, max_target_length=6)
    model.set_search_defaults(SearchSettings(length_penalty=0.7))
    folder = model.save_to_preset(str(tmp_path / "alpha"))
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as file:
        recorded = json.load(file)["search"]
    assert SearchSettings.from_config(recorded) == SearchSettings(length_penalty=0.7)
    loaded = Translator.from_preset(folder)
    assert loaded.search_defaults == model.search_defaults
    assert loaded.search_settings.length_penalty == 0.7
    assert presets.preset_length_penalty(folder) == 0.7
    texts = ["abcd", "dcb"]
    with_default = loaded.translate(texts, beam_size=3)
    assert with_default == loaded.translate(texts, beam_size=3, length_penalty=0.7)
    assert with_default == model.translate(texts, beam_size=3, length_penalty=0.7)
    # `compile(sampler=...)` changes the method, not the preset's penalty.
    loaded.compile(sampler="beam")
    assert loaded.search_settings == SearchSettings(
        "beam", beam_size=5, length_penalty=0.7
    )
    loaded.compile(sampler=SearchSettings("beam", beam_size=2))
    assert loaded.search_settings.length_penalty == 0.0
    loaded.compile()
    assert loaded.search_settings == loaded.search_defaults
    # A model without recorded settings keeps its class's.
    plain = Translator(tok, tok, embedding_dim=4, units=4)
    assert "search" not in presets.preset_metadata(
        plain.save_to_preset(str(tmp_path / "plain"))
    )
