"""TrainingRun: a run killed in its second epoch and resumed ends with the
weights (and optimizer state) of a run that was never stopped; its folder,
its errors, and the averaged last epochs."""

import json
import os

import keras
import numpy as np
import pytest

from keras_rnnattn.datasets import LengthBucketedBatches
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer
from keras_rnnattn.training import (
    BudgetCallbacks,
    TrainingRun,
    adam_with_ema,
    fit_best,
    linear_decay,
)

WORDS = [
    "".join("abcdef"[(i * 7 + j * 3) % 6] for j in range(2 + i % 5)) for i in range(48)
]


class Killed(Exception):
    """Stands for the end of the process: nothing after it is saved."""


class KillAt(keras.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at, self.epoch = (epoch, batch), None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise Killed


def translator():
    """A tiny Translator (dropout, EMA, clipping: every kind of state)."""
    keras.utils.set_random_seed(3)
    model = Translator(
        CharTokenizer().fit(WORDS),
        CharTokenizer().fit([w[::-1] for w in WORDS]),
        embedding_dim=4,
        units=8,
        dropout=0.2,
        max_source_length=8,
        max_target_length=8,
    )
    model.compile(optimizer=adam_with_ema(0.02, ema=0.9))
    return model


def batches(model, shuffle=True):
    (source, target_in), target_out = model.encode_pairs(
        WORDS, [w[::-1] for w in WORDS]
    )
    return LengthBucketedBatches(
        (source, target_in), target_out, batch_size=8, shuffle=shuffle, seed=5
    )


def train(folder=None, resume=False, epochs=3, kill=None, keep_last=1, budget=True):
    model = translator()
    schedule = [linear_decay(0.02, epochs)] + ([KillAt(*kill)] if kill else [])
    callbacks = BudgetCallbacks(
        60, patience=5, swap_ema=True, decay_learning_rate=False, schedule=schedule
    )
    run = None
    if folder is not None:
        run = TrainingRun(folder, resume=resume, keep_last=keep_last, options={"a": 1})
    metrics = fit_best(
        model,
        batches(model),
        validation_data=batches(model, shuffle=False),
        epochs=epochs,
        verbose=0,
        callbacks=callbacks,
        run=run,
    )
    return model, metrics


def state_of(model):
    return [keras.ops.convert_to_numpy(v) for v in model.variables] + [
        keras.ops.convert_to_numpy(v) for v in model.optimizer.variables
    ]


def test_a_run_killed_in_its_second_epoch_resumes_to_the_same_weights(tmp_path):
    straight, straight_metrics = train(tmp_path / "straight")
    folder = tmp_path / "killed"
    with pytest.raises(Killed):
        train(folder, kill=(1, 2))  # epoch 1 is checkpointed, epoch 2 is not
    assert TrainingRun(folder, resume=True).epochs_done == 1
    resumed, metrics = train(folder, resume=True)
    assert metrics["epochs_run"] == 3
    assert metrics["best_val_loss"] == pytest.approx(straight_metrics["best_val_loss"])
    for got, expected in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    record = json.loads((folder / "run.json").read_text())
    assert record["epoch"] == 3 and record["options"] == {"a": 1}
    assert [c["epochs"] for c in record["calls"]] == [[2, 3]]
    assert record["calls"][0]["start_weights"] == "resumed at epoch 1"


def test_the_checkpoint_holds_every_variable_of_the_uninterrupted_run(tmp_path):
    # Two epochs straight, and one epoch then a resumed second: the model's
    # variables (seeds included) and the optimizer's are the same at the end.
    first = tmp_path / "straight"
    train(first, epochs=2)
    second = tmp_path / "resumed"
    with pytest.raises(Killed):
        train(second, epochs=2, kill=(1, 0))
    train(second, resume=True, epochs=2)
    with (
        np.load(first / "state_0002.npz") as a,
        np.load(second / "state_0002.npz") as b,
    ):
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            np.testing.assert_allclose(
                a[key], b[key], rtol=1e-5, atol=1e-6, err_msg=key
            )
    assert not (second / "state_0001.npz").exists()  # the older checkpoint is gone


def test_a_new_run_refuses_a_folder_with_a_run_and_resume_needs_one(tmp_path):
    train(tmp_path, epochs=1)
    with pytest.raises(ValueError, match="holds a training run already.*--resume"):
        TrainingRun(tmp_path)
    with pytest.raises(ValueError, match="No training run to resume"):
        TrainingRun(tmp_path / "elsewhere", resume=True)
    with pytest.raises(ValueError, match="keep_last"):
        TrainingRun(tmp_path / "x", keep_last=0)


def test_resuming_with_another_model_names_the_variable(tmp_path):
    train(tmp_path, epochs=1)
    model = Translator(
        CharTokenizer().fit(WORDS),
        CharTokenizer().fit(WORDS),
        embedding_dim=4,
        units=6,
        max_source_length=8,
        max_target_length=8,
    )
    model.compile(optimizer=adam_with_ema(0.02, ema=0.9))
    with pytest.raises(ValueError, match=r"saved .*same recipe options"):
        fit_best(
            model,
            batches(model),
            epochs=2,
            verbose=0,
            callbacks=BudgetCallbacks(60, swap_ema=True),
            run=TrainingRun(tmp_path, resume=True),
        )


def test_the_last_epochs_are_kept_and_their_average_shipped_when_better(tmp_path):
    model, metrics = train(tmp_path, epochs=4, keep_last=3)
    files = sorted(os.listdir(tmp_path / "epochs"))
    assert files == [f"epoch_{k:04d}.weights.h5" for k in (2, 3, 4)]
    averaged, single = metrics["averaged_val_loss"], metrics["best_single_val_loss"]
    if averaged < single:
        assert metrics["shipped_weights"] == "the average of epochs 2-4"
    else:
        assert metrics["shipped_weights"].startswith("epoch ")
    # The model holds what the metrics say it ships.
    loss = model.evaluate(batches(model, shuffle=False), verbose=0, return_dict=True)
    assert loss["loss"] == pytest.approx(min(averaged, single), rel=1e-4)
    assert metrics["training_history"][0]["epochs"] == [1, 4]
