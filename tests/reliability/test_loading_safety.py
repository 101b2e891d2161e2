"""Loading safety of the application models: tampered `.keras` files and presets.

tests/test_presets.py covers the preset machinery on tiny stand-in models; these
tests damage real Translator and AttentionClassifier files.
"""

import hashlib
import json
import os
import shutil
import zipfile

import h5py
import keras
import numpy as np
import pytest

from keras_rnnattn.models import AttentionClassifier, Translator
from keras_rnnattn.presets.error import PresetError
from keras_rnnattn.text import CharTokenizer, WordTokenizer

TEXTS = ["a good film", "a bad film", "good good", "bad"]


def make_classifier():
    keras.utils.set_random_seed(0)
    return AttentionClassifier(
        tokenizer=WordTokenizer().fit(TEXTS),
        labels=["neg", "pos"],
        embedding_dim=4,
        units=4,
    )


def make_translator():
    keras.utils.set_random_seed(0)
    digits = CharTokenizer().fit(["0123456789"])
    return Translator(digits, digits, embedding_dim=4, units=8)


MODELS = {"classifier": make_classifier, "translator": make_translator}


# --- .keras files -----------------------------------------------------------------------
def rewrite_config(path, edit):
    """Rewrites config.json inside a `.keras` archive with `edit(config)`."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode("utf-8")
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def tokenizer_fields(config):
    """The serialized tokenizers inside a model's config (one or two)."""
    inner = config["config"]
    return [inner[k] for k in ("tokenizer", "source_tokenizer") if k in inner]


@pytest.fixture(scope="module", params=sorted(MODELS))
def saved(request, tmp_path_factory):
    """A `.keras` file of each model, saved once; tests damage copies."""
    model = MODELS[request.param]()
    path = str(tmp_path_factory.mktemp(request.param) / "model.keras")
    model.save(path)
    return request.param, model, path


@pytest.fixture
def copy(saved, tmp_path):
    name, model, path = saved
    return name, model, shutil.copy(path, tmp_path / "model.keras")


def test_round_trip_loads_in_safe_mode(copy):
    name, model, path = copy
    loaded = keras.saving.load_model(path)  # safe_mode=True is the default
    assert type(loaded) is type(model)
    for a, b in zip(loaded.weights, model.weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b)
        )


def test_unknown_class_is_refused(copy):
    _, _, path = copy

    def edit(config):
        config["class_name"] = "NoSuchModel"
        config["registered_name"] = "keras_rnnattn>NoSuchModel"

    rewrite_config(path, edit)
    with pytest.raises((TypeError, ValueError), match="NoSuchModel"):
        keras.saving.load_model(path)


def test_config_naming_arbitrary_code_runs_nothing(copy, monkeypatch):
    _, _, path = copy
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)

    def edit(config):
        config.update(
            module="os", class_name="system", registered_name="system", config={}
        )

    rewrite_config(path, edit)
    with pytest.raises((TypeError, ValueError), match="system"):
        keras.saving.load_model(path)
    assert calls == []


@pytest.mark.parametrize(
    "class_name",
    ["Tokenizer", "Vocabulary", "normalize", "keras_rnnattn>Translator", "os.system"],
)
def test_tampered_tokenizer_class_is_refused(copy, class_name):
    _, _, path = copy

    def edit(config):
        for field in tokenizer_fields(config):
            field["class_name"] = class_name

    rewrite_config(path, edit)
    with pytest.raises((TypeError, ValueError)) as info:
        keras.saving.load_model(path)
    message = str(info.value)
    assert "tokenizer" in message and repr(class_name) in message


def test_tampered_tokenizer_data_is_refused(copy):
    _, _, path = copy

    def edit(config):
        for field in tokenizer_fields(config):
            field["config"]["vocabulary"] = {"tokens": 7}

    rewrite_config(path, edit)
    with pytest.raises((TypeError, ValueError), match="does not rebuild"):
        keras.saving.load_model(path)


def test_tampered_sizes_are_refused(copy):
    name, _, path = copy

    def edit(config):
        config["config"]["units"] = -3

    rewrite_config(path, edit)
    with pytest.raises((TypeError, ValueError), match="units|-3"):
        keras.saving.load_model(path)


def test_lambda_layer_is_refused(tmp_path):
    classifier = make_classifier()
    inputs = keras.Input((None,), dtype="int32")
    doubled = keras.layers.Lambda(lambda p: 2.0 * p)(classifier(inputs))
    path = str(tmp_path / "with_lambda.keras")
    keras.Model(inputs, doubled).save(path)
    with pytest.raises(ValueError, match="(?i)lambda") as info:
        keras.saving.load_model(path)
    assert "safe_mode" in str(info.value)


# --- Presets -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def translator_preset(tmp_path_factory):
    model = make_translator()
    return model, model.save_to_preset(tmp_path_factory.mktemp("tr") / "preset")


@pytest.fixture
def preset(translator_preset, tmp_path):
    model, master = translator_preset
    return model, str(shutil.copytree(master, tmp_path / "preset"))


def forget_checksums(path):
    """Drops the recorded sizes and SHA-256, so the weights file itself is read."""
    file = os.path.join(path, "metadata.json")
    with open(file, encoding="utf-8") as f:
        metadata = json.load(f)
    del metadata["files"]
    with open(file, "w", encoding="utf-8") as f:
        json.dump(metadata, f)


def test_preset_round_trip_translates_the_same(preset):
    model, path = preset
    loaded = Translator.from_preset(path)
    texts = ["0123", "98765"]
    assert loaded.translate(texts) == model.translate(texts)


def _record_file(path, name):
    """Records file `name`'s new size and SHA-256 in the preset's metadata."""
    file = os.path.join(path, name)
    with open(file, "rb") as f:
        data = f.read()
    meta_file = os.path.join(path, "metadata.json")
    with open(meta_file, encoding="utf-8") as f:
        metadata = json.load(f)
    metadata["files"][name] = {
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    with open(meta_file, "w", encoding="utf-8") as f:
        json.dump(metadata, f)


def test_preset_with_tampered_tokenizer_is_refused(preset):
    _, path = preset
    file = os.path.join(path, "config.json")
    with open(file, encoding="utf-8") as f:
        config = json.load(f)
    config["config"]["source_tokenizer"]["class_name"] = "Tokenizer"
    with open(file, "w", encoding="utf-8") as f:
        json.dump(config, f)
    _record_file(path, "config.json")  # past the checksum: the class check refuses
    with pytest.raises(PresetError, match="tokenizer class") as info:
        Translator.from_preset(path)
    assert file in str(info.value)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "edited"])
@pytest.mark.parametrize("checksums", [True, False])
def test_damaged_weights_are_named(preset, damage, checksums):
    _, path = preset
    weights = os.path.join(path, "model.weights.h5")
    size = os.path.getsize(weights)
    if damage == "truncated":
        with open(weights, "r+b") as f:
            f.truncate(size // 3)
    elif damage == "empty":
        open(weights, "wb").close()
    elif damage == "garbage":  # same size, random bytes
        with open(weights, "wb") as f:
            f.write(np.random.default_rng(0).bytes(size))
    else:  # valid HDF5 with one weight removed
        with h5py.File(weights, "r+") as f:
            names = []
            f.visit(
                lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None
            )
            del f[names[0]]
    if not checksums:
        forget_checksums(path)
    with pytest.raises(PresetError) as info:
        Translator.from_preset(path)
    message = str(info.value)
    assert weights in message
    # One clear error: no h5py traceback chained to it.
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__
    if checksums:
        assert "truncated or corrupt" in message or "SHA-256" in message
    else:
        assert message.startswith(f"Could not load the weights file {weights}")


def test_truncated_keras_file_is_named(copy):
    _, _, path = copy
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    # Keras's own message ("File not found ... an accessible `.keras` zip file")
    # names the file; no zipfile or h5py traceback reaches the user.
    with pytest.raises(ValueError, match=".keras` zip file") as info:
        keras.saving.load_model(path)
    assert str(path) in str(info.value)
