"""Preset lookup and metadata without Keras: the headline metric, the beam's penalties."""

import json
import os
import subprocess
import sys

import pytest

from keras_rnnattn.presets import catalog as preset_catalog
from tests.backends import on_one_backend
from tests.preset_test_models import TinyClassifier, TinyTranslator

pytestmark = on_one_backend  # no Keras: the same on every backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "metrics, expected",
    [
        # The shipped presets' kinds of metrics.
        (
            {"test_greedy_bleu": 8.0, "test_beam4_bleu": 9.7, "test_beam4_chrf": 30.4},
            ("test_beam4_bleu", 9.7),
        ),
        (
            {"validation_accuracy": 0.77, "test_accuracy_first_200": 0.86,
             "test_accuracy": 0.82, "epochs_run": 4},
            ("test_accuracy", 0.82),
        ),
        (
            {"no_attention_test_perplexity": 3.1, "attention_test_perplexity": 3.07,
             "test_slice_perplexity_first_100": 3.12, "attention_parameters": 471766},
            ("attention_test_perplexity", 3.07),
        ),
        (
            {"validation_greedy_wer": 33.1, "test_greedy_wer": 31.96,
             "test_beam4_wer": 31.67, "test_beam4_wer_without_stress": 26.61,
             "no_attention_test_beam4_wer": 40.0},
            ("test_beam4_wer", 31.67),
        ),
        ({"accuracy": 0.5}, ("accuracy", 0.5)),
        ({"epochs_run": 3, "stopped": True, "test_bleu": "n/a"}, None),
        (None, None),
    ],
    ids=["translator", "classifier", "language_model", "g2p", "no_split", "none",
         "no_dict"],
)  # fmt: skip
def test_headline_metric(metrics, expected):
    assert preset_catalog.headline_metric(metrics) == expected


def test_beam_penalties_come_from_the_metrics(tmp_path):
    with open(tmp_path / "metadata.json", "w") as f:
        json.dump({"search": {"length_penalty": 1.2}}, f)
    assert preset_catalog.preset_beam_penalties(str(tmp_path)) == {
        "length_penalty": 1.2,
        "coverage_penalty": 0.0,
    }
    with open(tmp_path / "metadata.json", "w") as f:
        json.dump({"search": {"coverage_penalty": 0.2}}, f)
    assert (
        preset_catalog.preset_beam_penalties(str(tmp_path))["coverage_penalty"] == 0.2
    )
    assert preset_catalog.preset_length_penalty(str(tmp_path)) == 0.0


LIST_WITHOUT_KERAS = """
import json, sys
from keras_rnnattn.presets import catalog as preset_catalog
details = preset_catalog.preset_details()
print(json.dumps({
    "names": list(details),
    "details": details,
    "found": preset_catalog.find_preset("tiny_tr"),
    "imported": [m for m in ("keras", "tensorflow", "jax", "torch") if m in sys.modules],
}))
"""


def test_details_are_read_without_importing_keras(tmp_path):
    TinyClassifier().save_to_preset(
        tmp_path / "tiny_clf", {"description": "d", "metrics": {"accuracy": 0.5}}
    )
    TinyTranslator().save_to_preset(tmp_path / "tiny_tr")
    (tmp_path / "tiny_tr" / "metadata.json").write_text("{broken")
    env = {**os.environ, "PYTHONPATH": REPO, preset_catalog.PRESETS_ENV: str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", LIST_WITHOUT_KERAS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["imported"] == []
    assert out["names"][:2] == ["tiny_clf", "tiny_tr"]
    assert out["found"] == str(tmp_path / "tiny_tr")
    clf = out["details"]["tiny_clf"]
    assert clf["metadata"]["description"] == "d"
    assert clf["metadata"]["class_name"] == "TinyClassifier"
    assert "model.weights.h5" in clf["metadata"]["files"]  # everything, nested too
    files = os.listdir(tmp_path / "tiny_clf")
    assert clf["bytes"] == sum(
        os.path.getsize(tmp_path / "tiny_clf" / f) for f in files
    )
    broken = out["details"]["tiny_tr"]
    assert broken["metadata"] == {} and "not valid JSON" in broken["error"]
