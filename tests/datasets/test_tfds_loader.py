"""Tests of load_tfds: prepared data first, a fast clear error when offline."""

import sys
import time
import types

import pytest

from keras_rnnattn.datasets import DatasetNotFoundError, load_tfds, tfds_loader
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


class FakeTfds(types.ModuleType):
    """A stand-in tensorflow_datasets whose data is prepared or not."""

    def __init__(self, prepared):
        super().__init__("tensorflow_datasets")
        self.prepared = prepared
        self.calls = []

    def load(self, name, split, data_dir, download, **kwargs):
        self.calls.append((name, split, download, kwargs))
        if not (self.prepared or download):
            raise AssertionError(f"Dataset {name}: could not find data in {data_dir}.")
        return f"dataset {name} {split}"


@pytest.fixture
def fake_tfds(monkeypatch):
    def install(prepared, online):
        module = FakeTfds(prepared)
        monkeypatch.setitem(sys.modules, "tensorflow_datasets", module)
        monkeypatch.setattr(tfds_loader, "_network_available", lambda timeout: online)
        return module

    return install


def test_prepared_data_is_loaded_without_download(fake_tfds):
    tfds = fake_tfds(prepared=True, online=False)
    assert load_tfds("imdb_reviews", split="test", as_supervised=True) == (
        "dataset imdb_reviews test"
    )
    assert tfds.calls == [("imdb_reviews", "test", False, {"as_supervised": True})]


def test_missing_data_downloads_when_online(fake_tfds):
    tfds = fake_tfds(prepared=False, online=True)
    assert load_tfds("ted_hrlr_translate/pt_to_en") == (
        "dataset ted_hrlr_translate/pt_to_en train"
    )
    assert [call[2] for call in tfds.calls] == [False, True]


def test_missing_data_offline_fails_with_the_fix(fake_tfds):
    tfds = fake_tfds(prepared=False, online=False)
    with pytest.raises(DatasetNotFoundError, match="tfds build imdb_reviews"):
        load_tfds("imdb_reviews")
    assert [call[2] for call in tfds.calls] == [False]  # never tried to download
    with pytest.raises(DatasetNotFoundError, match="download=False"):
        load_tfds("imdb_reviews", download=False)


def test_network_probe_gives_up_within_the_timeout(monkeypatch):
    def hang(*args, **kwargs):  # a DNS look-up or connect that takes too long
        time.sleep(1)
        raise OSError("timed out")

    monkeypatch.setattr(tfds_loader.socket, "create_connection", hang)
    start = time.perf_counter()
    assert tfds_loader._network_available(0.2) is False
    assert time.perf_counter() - start < 2


def test_real_tfds_fails_fast_offline(monkeypatch, tmp_path):
    pytest.importorskip("tensorflow_datasets")
    monkeypatch.setattr(tfds_loader, "_network_available", lambda timeout: False)
    start = time.perf_counter()
    with pytest.raises(DatasetNotFoundError, match="cannot be downloaded"):
        load_tfds("imdb_reviews", data_dir=str(tmp_path))
    with pytest.raises(ValueError, match="not found"):  # unknown names: tfds's error
        load_tfds("no_such_dataset_here", data_dir=str(tmp_path))
    assert time.perf_counter() - start < 30
