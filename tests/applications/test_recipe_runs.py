"""The recipes' training-run options on a tiny G2P run: `--resume` takes the
run's options, `--init-from` starts from a preset's weights and history,
`--average-last` keeps the last epochs. (That a resumed run ends with the
weights of an uninterrupted one is tested on every backend in
tests/training/test_training_run.py.)"""

import json

import numpy as np
import pytest

from applications import runs
from applications.misaki_us_g2p import train as recipe
from tests.backends import on_one_backend

# The options' plumbing is the same on every backend.
pytestmark = on_one_backend

PAIRS = [
    ("cat", "kˈæt"),
    ("bat", "bˈæt"),
    ("tab", "tˈæb"),
    ("act", "ˈækt"),
    ("cab", "kˈæb"),
    ("tic", "tˈɪk"),
    ("bit", "bˈɪt"),
    ("tact", "tˈækt"),
]


def data(pairs):
    return [w for w, _ in pairs], [p for _, p in pairs]


def tiny(argv):
    args = recipe.parse_args(["--quick", "--batch-size", "4", *argv])
    return recipe.train(args, data(PAIRS), data(PAIRS[:4]))


def test_resume_reads_the_run_options_and_goes_on(tmp_path):
    folder = str(tmp_path / "run")
    _, first = tiny(["--epochs", "2", "--schedule", "linear", "--run-dir", folder])
    assert first["epochs_run"] == 2 and first["learning_rate_schedule"] == "linear"
    options = json.loads((tmp_path / "run" / "run.json").read_text())["options"]
    assert "--run-dir" not in options and options[-2:] == ["--schedule", "linear"]
    args = recipe.parse_args(["--resume", folder, "--epochs", "3", "--minutes", "5"])
    assert (args.schedule, args.epochs, args.minutes) == ("linear", 3, 5.0)
    model, metrics = recipe.train(args, data(PAIRS), data(PAIRS[:4]))
    assert metrics["epochs_run"] == 3
    history = metrics["training_history"]
    assert [h["epochs"] for h in history] == [[1, 2], [3, 3]]
    assert history[1]["start_weights"] == "resumed at epoch 2"


def test_init_from_starts_from_the_preset_weights_and_history(tmp_path):
    model, metrics = tiny(["--epochs", "1", "--run-dir", str(tmp_path / "a")])
    preset = model.save_to_preset(
        str(tmp_path / "preset"), metadata={"metrics": metrics}
    )
    # A learning rate of almost nothing: the weights stay the preset's.
    tuned, tuned_metrics = tiny(
        [
            "--init-from",
            preset,
            "--learning-rate",
            "1e-12",
            "--run-dir",
            str(tmp_path / "b"),
        ]
    )
    for got, expected in zip(tuned.get_weights(), model.get_weights()):
        np.testing.assert_allclose(got, expected, atol=1e-6)
    history = tuned_metrics["training_history"]
    assert history[0] == metrics["training_history"][0]
    assert history[1]["start_weights"] == f"preset {preset}"


def test_average_last_keeps_the_last_epochs_and_says_what_it_shipped(tmp_path):
    _, metrics = tiny(
        ["--epochs", "3", "--average-last", "2", "--run-dir", str(tmp_path)]
    )
    assert sorted(p.name for p in (tmp_path / "epochs").iterdir()) == [
        "epoch_0002.weights.h5",
        "epoch_0003.weights.h5",
    ]
    assert metrics["shipped_weights"] in (
        "the average of epochs 2-3",
        *(f"epoch {k} (the best val_loss)" for k in (1, 2, 3)),
    )
    assert "averaged_val_loss" in metrics


def test_resume_without_a_run_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        recipe.parse_args(["--resume", str(tmp_path)])
    assert "no training run there" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--average-last"):
        runs.fit_run(
            recipe.parse_args(["--average-last", "0"]), "x", None, callbacks=None
        )
