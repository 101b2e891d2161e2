"""Presets from hub handles, `hf://` and `kaggle://`, read from the clients' own caches.

No network: each test fills the cache layout that `huggingface_hub` or
`kagglehub` reads (their documented layouts, checked by the libraries' own
cache readers) and loads through the real clients, offline.
"""

import hashlib
import os
import shutil
import sys
import time

import numpy as np
import pytest

from keras_rnnattn import presets
from keras_rnnattn.presets.error import PresetError
from keras_rnnattn.presets.mixin import PresetMixin
from tests.preset_test_models import FEATURES, TinyClassifier, fitted_tokenizer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def features(n=5):
    return np.random.default_rng(1).normal(size=(n, FEATURES)).astype("float32")


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory):
    model = TinyClassifier(tokenizer=fitted_tokenizer())
    path = model.save_to_preset(tmp_path_factory.mktemp("hub") / "tiny")
    return model, path


# --- Hugging Face --------------------------------------------------------------------
@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache, read offline (`HF_HUB_OFFLINE=1`)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # The library reads both variables when imported: set them for this process too.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def cache_hf_repo(cache, repo_id, folder, revision=COMMIT, ref="main"):
    """Puts `folder`'s files in the cache as `huggingface_hub` stores a download:
    blobs named by their hash, a snapshot of links to them, a ref to the commit."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for name in sorted(os.listdir(folder)):
        data = open(os.path.join(folder, name), "rb").read()
        blob = hashlib.sha256(data).hexdigest()
        (repo / "blobs" / blob).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), snapshot / name)
    (repo / "refs" / ref).write_text(revision)
    return repo


def test_hf_handle_loads_from_the_cache_with_identical_outputs(hf_cache, tiny_preset):
    import huggingface_hub

    model, folder = tiny_preset
    cache_hf_repo(hf_cache, "someone/tiny-clf", folder)
    # The library itself sees a complete cached repository.
    (repo,) = huggingface_hub.scan_cache_dir(hf_cache).repos
    assert repo.repo_id == "someone/tiny-clf"
    assert {f.file_name for f in next(iter(repo.revisions)).files} == set(
        os.listdir(folder)
    )

    loaded = TinyClassifier.from_preset("hf://someone/tiny-clf")
    assert type(loaded) is TinyClassifier
    np.testing.assert_array_equal(
        loaded.predict(features(), verbose=0), model.predict(features(), verbose=0)
    )
    assert presets.find_preset("hf://someone/tiny-clf") == str(
        hf_cache / "models--someone--tiny-clf" / "snapshots" / COMMIT
    )
    assert presets.find_preset(f"hf://someone/tiny-clf@{COMMIT}").endswith(COMMIT)
    assert presets.preset_metadata("hf://someone/tiny-clf")["class_name"] == (
        "TinyClassifier"
    )
    assert type(PresetMixin.from_preset("hf://someone/tiny-clf")) is TinyClassifier


def test_hf_tampered_weights_in_the_cache_fail_the_checksum(hf_cache, tiny_preset):
    _, folder = tiny_preset
    repo = cache_hf_repo(hf_cache, "someone/tiny-clf", folder)
    weights = os.path.realpath(
        repo / "snapshots" / COMMIT / presets.WEIGHTS_FILE
    )  # the blob
    with open(weights, "r+b") as f:
        f.seek(os.path.getsize(weights) - 64)
        f.write(b"\xff" * 8)
    with pytest.raises(PresetError, match="SHA-256"):
        TinyClassifier.from_preset("hf://someone/tiny-clf")


def test_hf_offline_and_not_cached_is_one_fast_clear_error(hf_cache):
    start = time.perf_counter()
    with pytest.raises(PresetError) as info:
        TinyClassifier.from_preset("hf://someone/not-cached")
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert "'hf://someone/not-cached'" in message
    assert "HF_HUB_OFFLINE" in message and str(hf_cache) in message
    assert info.value.__suppress_context__  # not the client's traceback


def test_hf_unknown_revision_and_folder_without_a_preset(hf_cache, tmp_path):
    empty = tmp_path / "not_a_preset"
    empty.mkdir()
    (empty / "README.md").write_text("hello\n")
    cache_hf_repo(hf_cache, "someone/readme-only", empty)
    with pytest.raises(PresetError, match="holds no config.json"):
        presets.find_preset("hf://someone/readme-only")
    with pytest.raises(PresetError, match="'hf://someone/readme-only@v9'"):
        presets.find_preset("hf://someone/readme-only@v9")


@pytest.mark.parametrize(
    "handle",
    ["hf://someone", "hf://a/b/c", "hf://someone/x@", "hf:///x"],
)
def test_malformed_hf_handles_say_the_form(handle):
    with pytest.raises(PresetError, match=r"hf://<owner>/<name>"):
        presets.find_preset(handle)


# --- Kaggle --------------------------------------------------------------------------
@pytest.fixture
def kaggle_cache(tmp_path, monkeypatch):
    pytest.importorskip("kagglehub")
    cache = tmp_path / "kagglehub"
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(cache))
    # Outside Kaggle and Colab notebooks: the HTTP resolver and its cache.
    for name in ("KAGGLE_KERNEL_RUN_TYPE", "COLAB_RELEASE_TAG", "KAGGLE_USERNAME"):
        monkeypatch.delenv(name, raising=False)
    return cache


def cache_kaggle_model(cache, handle, folder):
    """Puts `folder` where `kagglehub.model_download(handle)` leaves a download:
    models/<owner>/<model>/<framework>/<variation>/<version>/, marked complete."""
    *variation, version = handle.split("/")
    base = cache.joinpath("models", *variation)
    shutil.copytree(folder, base / version)
    (base / f"{version}.complete").write_text("")
    return base / version


def test_kaggle_handle_with_version_loads_from_the_cache(kaggle_cache, tiny_preset):
    import kagglehub

    model, folder = tiny_preset
    cached = cache_kaggle_model(kaggle_cache, "someone/tiny/keras/clf/2", folder)
    assert kagglehub.model_download("someone/tiny/keras/clf/2") == str(cached)
    loaded = TinyClassifier.from_preset("kaggle://someone/tiny/keras/clf/2")
    np.testing.assert_array_equal(
        loaded.predict(features(), verbose=0), model.predict(features(), verbose=0)
    )


def test_kaggle_tampered_weights_fail_the_checksum(kaggle_cache, tiny_preset):
    _, folder = tiny_preset
    cached = cache_kaggle_model(kaggle_cache, "someone/tiny/keras/clf/1", folder)
    weights = cached / presets.WEIGHTS_FILE
    data = weights.read_bytes()
    weights.write_bytes(data[:-64] + b"\xff" * 8 + data[-56:])
    with pytest.raises(PresetError, match="SHA-256"):
        TinyClassifier.from_preset("kaggle://someone/tiny/keras/clf/1")


def test_kaggle_offline_errors_are_fast_and_say_what_to_do(kaggle_cache, tiny_preset):
    _, folder = tiny_preset
    cache_kaggle_model(kaggle_cache, "someone/tiny/keras/clf/3", folder)
    start = time.perf_counter()
    # Without a version, the latest is asked of Kaggle: the cached one is named.
    with pytest.raises(PresetError) as info:
        TinyClassifier.from_preset("kaggle://someone/tiny/keras/clf")
    message = str(info.value)
    assert "'kaggle://someone/tiny/keras/clf'" in message
    assert "kaggle://someone/tiny/keras/clf/3" in message
    # A version that is not cached.
    with pytest.raises(PresetError) as info:
        TinyClassifier.from_preset("kaggle://someone/tiny/keras/clf/4")
    assert "'kaggle://someone/tiny/keras/clf/4'" in str(info.value)
    assert str(kaggle_cache) in str(info.value)
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    "handle, match",
    [
        ("kaggle://someone/tiny", "kaggle://<owner>/<model>/<framework>"),
        ("kaggle://someone/tiny/keras/clf/latest", "version .* is a number"),
        ("gs://bucket/preset", "Unsupported preset handle 'gs://bucket/preset'"),
    ],
)
def test_malformed_handles_say_the_form(handle, match):
    with pytest.raises(PresetError, match=match):
        presets.find_preset(handle)


# --- Without the clients ---------------------------------------------------------------
@pytest.mark.parametrize(
    "module, handle",
    [("huggingface_hub", "hf://someone/x"), ("kagglehub", "kaggle://a/b/keras/c")],
)
def test_missing_client_says_to_install_the_hub_extra(monkeypatch, module, handle):
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError, match=r'pip install "\.\[hub\]"'):
        presets.find_preset(handle)


# --- The class property ------------------------------------------------------------------
def test_presets_class_property_is_list_presets(tiny_preset, monkeypatch):
    _, folder = tiny_preset
    monkeypatch.setenv(presets.PRESETS_ENV, os.path.dirname(folder))
    assert TinyClassifier.presets == TinyClassifier.list_presets()
    assert "tiny" in TinyClassifier.presets
    assert PresetMixin.presets == PresetMixin.list_presets()
    # Not on instances: Keras reads every attribute of a model when it saves or
    # loads weights, and would list the presets each time.
    assert not hasattr(TinyClassifier(tokenizer=fitted_tokenizer()), "presets")
