"""update_metadata: a preset's metadata.json updated and read back."""

import doctest
import json

import pytest

from keras_rnnattn.presets.catalog import preset_metadata
from keras_rnnattn.training import metadata as metadata_module
from keras_rnnattn.training import update_metadata
from tests.backends import on_one_backend

# Plain JSON files: the same on every backend.
pytestmark = on_one_backend


def write(folder, metadata):
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    return folder


def test_round_trip_with_peers_and_other_runs(tmp_path):
    preset = write(
        tmp_path / "preset",
        {
            "description": "Übersetzer",
            "metrics": {"test_bleu": 9.7, "peers": {"joey": {"bleu": 5.7}}},
        },
    )
    baseline = write(
        tmp_path / "baseline",
        {
            "metrics": {
                "test": {"overall": {"f1": 60.0}},
                "test_bleu": 7.1,
                "parameters": 1000,
                "epochs_run": 12,
                "train_seconds": 99.0,  # not a test metric: left out
                "best_val_loss": 2.0,
            }
        },
    )
    peer = {"system": "CRF α", "bleu": 3.0}
    written = update_metadata(
        preset,
        {"peers": {"crf": peer}, "note": "both"},
        runs={"no_attention": baseline, "monotonic": None},
    )
    assert written == preset_metadata(str(preset))  # what the file holds
    assert written == {
        "description": "Übersetzer",
        "metrics": {
            "test_bleu": 9.7,
            "peers": {"joey": {"bleu": 5.7}, "crf": peer},  # merged, not replaced
            "note": "both",
            "no_attention_test": {"overall": {"f1": 60.0}},
            "no_attention_test_bleu": 7.1,
            "no_attention_parameters": 1000,
            "no_attention_epochs_run": 12,
        },
    }
    text = (preset / "metadata.json").read_text(encoding="utf-8")
    assert "Übersetzer" in text and "CRF α" in text  # written as UTF-8, not escaped
    # Again: the same keys are replaced, nothing is added twice.
    assert update_metadata(preset, {"peers": {"crf": peer}}) == written


def test_a_metadata_without_metrics_gets_them(tmp_path):
    preset = write(tmp_path / "preset", {"description": "x"})
    assert update_metadata(preset, {"peers": {"p": 1}})["metrics"] == {
        "peers": {"p": 1}
    }


def test_a_folder_without_metadata_is_refused(tmp_path):
    with pytest.raises(ValueError, match="save_to_preset"):
        update_metadata(tmp_path, {"x": 1})
    preset = write(tmp_path / "preset", {"metrics": {}})
    with pytest.raises(ValueError, match="save_to_preset"):
        update_metadata(preset, runs={"baseline": tmp_path / "missing"})


def test_docstring_example_runs():
    result = doctest.testmod(metadata_module)
    assert result.attempted > 0 and result.failed == 0
