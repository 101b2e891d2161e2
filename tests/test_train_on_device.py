"""scripts/train_on_device.sh in its --quick form on the CPU: a carried run
goes on in OUT/run, and OUT holds the preset (with its training history), the
run's checkpoints and the log."""

import json
import os
import subprocess
import sys
from pathlib import Path

from applications import common
from applications.misaki_us_g2p import train as recipe
from keras_rnnattn.datasets import load_misaki_lexicon
from tests.backends import on_one_backend

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "train_on_device.sh"

# A shell script around one recipe process: the same on every backend.
pytestmark = on_one_backend


def test_a_carried_run_goes_on_and_comes_back_under_out(tmp_path):
    carried = tmp_path / "runs" / "g2p"
    # One epoch of the recipe's --quick run here (its data as main() cuts it).
    train_data, val_data, _ = common.load_splits(load_misaki_lexicon)
    args = recipe.parse_args(["--quick", "--run-dir", str(carried)])
    recipe.train(
        args,
        tuple(side[:300] for side in train_data),
        tuple(side[:30] for side in val_data),
    )
    out = tmp_path / "out"
    env = dict(os.environ, PY=sys.executable, BACKEND=os.environ["KERAS_BACKEND"])
    result = subprocess.run(
        ["bash", str(SCRIPT), "misaki_us_g2p", str(out), "--minutes", "2"]
        + ["--resume", str(carried), "--epochs", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (out / "train.log").read_text().count("preset: ") == 1
    metadata = json.loads((out / "preset" / "metadata.json").read_text())
    history = metadata["metrics"]["training_history"]
    assert [h["epochs"] for h in history] == [[1, 1], [2, 2]]
    assert history[1]["start_weights"] == "resumed at epoch 1"
    assert json.loads((out / "run" / "run.json").read_text())["epoch"] == 2
    # The carried folder itself is left as it was.
    assert json.loads((carried / "run.json").read_text())["epoch"] == 1


def test_a_wrong_recipe_is_one_clear_error(tmp_path):
    result = subprocess.run(
        ["bash", str(SCRIPT), "no_such_recipe", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (
        result.returncode == 2
        and "no recipe applications/no_such_recipe" in result.stderr
    )
