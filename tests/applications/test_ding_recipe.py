"""The Ding recipe (applications/ding_de_en_bahdanau): its options, members,
training callbacks and batches, and a quick run of `main` on a small invented
dictionary (slow)."""

import json
import os
import tempfile

import numpy as np
import pytest

import applications.ding_de_en_bahdanau.data
import applications.ding_de_en_bahdanau.members
import applications.ding_de_en_bahdanau.options
import applications.ding_de_en_bahdanau.train
from keras_rnnattn.datasets import sources
from keras_rnnattn.models import Translator
from keras_rnnattn.text import BpeTokenizer, WordTokenizer

# The recipe's modules: recipe.train, recipe.options, recipe.data, recipe.members.
recipe = applications.ding_de_en_bahdanau


def test_member_command_lines():
    argv = [
        "--seed",
        "5",
        "--lexicon=100",
        "--out",
        "x",
        "--members-dir",
        "/m",
        "--tag",
    ]
    args = recipe.options.parse_args(argv)
    assert args.members == 2  # an ensemble by default
    assert recipe.members.member_argv(args, argv, 1) == [
        "--lexicon=100",
        "--tag",
        "--members",
        "1",
        "--seed",
        "6",
        "--run-dir",
        os.path.join("/m", "member_2", "run"),
        "--out",
        os.path.join("/m", "member_2"),
    ]
    assert recipe.options.parse_args(["--members", "1"]).members_dir is None


def test_parsing_makes_no_folder(tmp_path, monkeypatch):
    # The members' temporary folder is made when they train, not when the
    # options are read (each parse had left an empty folder behind).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert recipe.options.parse_args([]).members_dir is None
    assert not list(tmp_path.iterdir())


def test_members_share_one_compilation_cache(monkeypatch):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    env = recipe.members.member_env("/m")
    assert env["JAX_COMPILATION_CACHE_DIR"] == os.path.join("/m", "compilation_cache")
    assert env["OMP_NUM_THREADS"] == env["TF_NUM_INTRAOP_THREADS"] == "1"
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    # A cache the user named (shared by several runs) is kept.
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/shared/cache")
    assert (
        recipe.members.member_env("/m")["JAX_COMPILATION_CACHE_DIR"] == "/shared/cache"
    )


def test_input_feeding_flag():
    args = recipe.options.parse_args([])
    assert args.input_feeding
    assert "and input feeding" in recipe.options.describe_model(args)
    args = recipe.options.parse_args(["--no-input-feeding"])
    assert not args.input_feeding
    assert "(no input feeding)" in recipe.options.describe_model(args)
    # Members inherit it.
    argv = ["--no-input-feeding", "--members-dir", "/m"]
    member = recipe.members.member_argv(recipe.options.parse_args(argv), argv, 0)
    assert not recipe.options.parse_args(member).input_feeding


@pytest.mark.parametrize(
    "flag, default, value, described, off_word, bad",
    [
        ("fixnorm", 3.5, 2.0, ", fixnorm 2.0 output layer", "fixnorm", ["-1"]),
        ("ema", 0.999, 0.99, ", weights averaged (EMA 0.99)", "EMA", ["1", "-0.5"]),
    ],
)
def test_off_by_zero_flags(flag, default, value, described, off_word, bad):
    """--fixnorm and --ema: the preset's value by default, 0 turns them off
    (None), the description says which, bad values are refused and members
    inherit them, off included."""
    assert getattr(recipe.options.parse_args([]), flag) == default  # the preset's
    args = recipe.options.parse_args([f"--{flag}", "0"])
    assert getattr(args, flag) is None
    assert off_word not in recipe.options.describe_model(args)
    args = recipe.options.parse_args([f"--{flag}", str(value)])
    assert getattr(args, flag) == value
    assert described in recipe.options.describe_model(args)
    for item in bad:
        with pytest.raises(SystemExit):
            recipe.options.parse_args([f"--{flag}", item])
    for given, expected in ((str(value), value), ("0", None)):
        argv = [f"--{flag}", given, "--members-dir", "/m"]
        member = recipe.members.member_argv(recipe.options.parse_args(argv), argv, 0)
        assert getattr(recipe.options.parse_args(member), flag) == expected


@pytest.mark.parametrize(
    "schedule, expected",
    [
        ("linear", [4e-3, 3e-3, 2e-3, 1e-3]),  # (epochs - k) / epochs of the peak
        # Halved at the end of each epoch whose validation loss did not improve
        # (the first to stall is epoch 1), so from epoch 2 on.
        ("plateau", [4e-3, 4e-3, 2e-3, 1e-3]),
    ],
)
def test_learning_rate_schedules(schedule, expected):
    import keras

    args = recipe.options.parse_args(
        ["--schedule", schedule, "--epochs", "4", "--learning-rate", "4e-3"]
        + ["--ema", "0"]  # the plain weights: SGD keeps no average here
    )
    run = recipe.train.training_callbacks(args)
    budget, stop, callbacks = run.budget, run.stop, run.callbacks
    assert callbacks[0] is budget and stop in callbacks
    assert budget.decay_learning_rate == (schedule == "budget")
    x = np.linspace(-1, 1, 32).reshape(-1, 1).astype("float32")
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(args.learning_rate), "mse")
    # Trained towards 2x, validated against -2x: the validation loss rises
    # every epoch, so the plateau schedule halves the rate after each epoch
    # but the first (the linear one ignores it); early stopping's patience
    # of 3 lets all four epochs run.
    history = model.fit(
        x, 2 * x, validation_data=(x, -2 * x), epochs=4, callbacks=callbacks, verbose=0
    )
    rates = [
        float(keras.ops.convert_to_numpy(r)) for r in history.history["learning_rate"]
    ]
    np.testing.assert_allclose(rates, expected, rtol=1e-5)


@pytest.mark.parametrize("stop_after", [None, 3])
def test_ema_validates_and_keeps_the_average(stop_after):
    """With --ema the validation loss is of the averaged weights and training
    ends holding them, also when it stops before the last planned epoch (as
    the clock stops it); checked against plain SGD and the EMA in NumPy."""
    import keras

    args = recipe.options.parse_args(
        "--ema 0.5 --schedule linear --epochs 4 --learning-rate 0.1".split()
    )
    callbacks = recipe.train.training_callbacks(args).callbacks
    if stop_after:
        stopper = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: setattr(
                model, "stop_training", epoch + 1 >= stop_after
            )
        )
        callbacks = callbacks + [stopper]
    x = np.linspace(-1, 1, 16).reshape(-1, 1).astype("float32")
    y = 2 * x + 1
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.layers[0].set_weights([np.zeros((1, 1), "float32"), np.zeros(1, "float32")])
    model.compile(
        keras.optimizers.SGD(args.learning_rate, use_ema=True, ema_momentum=args.ema),
        "mse",
    )
    history = model.fit(
        x,
        y,
        batch_size=8,
        validation_data=(x, y),
        epochs=4,
        shuffle=False,
        callbacks=callbacks,
        verbose=0,
    )
    # NumPy: SGD on mean squared error, two batches an epoch, the rate
    # decayed linearly; the average starts at the first step's weights.
    w, b, average, val_losses = 0.0, 0.0, None, []
    for epoch in range(stop_after or 4):
        rate = args.learning_rate * (4 - epoch) / 4
        for rows in (slice(0, 8), slice(8, 16)):
            error = w * x[rows, 0] + b - y[rows, 0]
            w, b = (
                w - rate * 2 * np.mean(error * x[rows, 0]),
                b - rate * 2 * np.mean(error),
            )
            average = (
                np.array([w, b])
                if average is None
                else args.ema * average + (1 - args.ema) * np.array([w, b])
            )
        val_losses.append(np.mean((average[0] * x[:, 0] + average[1] - y[:, 0]) ** 2))
    np.testing.assert_allclose(history.history["val_loss"], val_losses, rtol=1e-4)
    kernel, bias = model.layers[0].get_weights()
    np.testing.assert_allclose([kernel[0, 0], bias[0]], average, rtol=1e-5)
    assert abs(average[0] - w) > 1e-3  # the average is not the last weights


def test_tags_only_auxiliary_sources():
    sentences = [("a b c", "x y"), ("b c", "y z"), ("c a b a", "z")]  # last: extra data
    lexicon = [("a", "x"), ("b c", "y y")]
    source = WordTokenizer().fit([de for de, _ in sentences + lexicon])
    target = WordTokenizer().fit([en for _, en in sentences + lexicon])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.data.TaggedBatches(
        model, sentences, 2, seed=0, extra=lexicon, extra_per_epoch=2
    )
    tagged = recipe.data.TaggedBatches(
        model,
        sentences,
        2,
        seed=0,
        extra=lexicon,
        extra_per_epoch=2,
        num_tagged=1,
        tag_id=source.bos_id,
    )
    assert tagged.source.shape[1] == plain.source.shape[1] + 1
    for row in range(5):
        ids = plain.source[row][plain.source[row] != 0].tolist()
        got = tagged.source[row][tagged.source[row] != 0].tolist()
        # Rows 0-1 are Ding sentences; row 2 is extra data, rows 3-4 the lexicon.
        assert got == (ids if row < 2 else [source.bos_id] + ids)
    np.testing.assert_array_equal(tagged.target_out, plain.target_out)
    np.testing.assert_array_equal(
        tagged.source_lengths - plain.source_lengths, [0, 0, 1, 1, 1]
    )


def test_refuses_inconsistent_options(capsys):
    for argv, message in (
        (["--share-embeddings"], "add --joint-bpe"),
        (["--target-multiple", "0"], "--target-multiple must be at least 1"),
    ):
        with pytest.raises(SystemExit):
            recipe.options.parse_args(argv)
        assert message in capsys.readouterr().err
    args = recipe.options.parse_args(["--joint-bpe", "--share-embeddings"])
    assert args.share_embeddings and args.target_multiple is None


def test_pads_targets_to_their_own_multiple():
    pairs = [("a b c d e f g h i j", "x"), ("a b", "x y z"), ("a", "x y")] * 2
    source = WordTokenizer().fit([de for de, _ in pairs])
    target = WordTokenizer().fit([en for _, en in pairs])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.data.TaggedBatches(model, pairs, 2, seed=0, shuffle=False)
    own = recipe.data.TaggedBatches(
        model, pairs, 2, seed=0, shuffle=False, target_multiple=4
    )
    for index in range(len(plain)):
        (src, tin), tout = plain[index]
        (src4, tin4), tout4 = own[index]
        assert src.shape[1] == tin.shape[1] == tout.shape[1]  # one length
        longest = int(np.max(np.sum(tout4 != 0, axis=1)))
        assert tin4.shape[1] == tout4.shape[1] == -(-longest // 4) * 4
        assert src4.shape[1] % 8 == 0
        # The same tokens, only the padding differs.
        for a, b in ((src, src4), (tin, tin4), (tout, tout4)):
            width = min(a.shape[1], b.shape[1])
            np.testing.assert_array_equal(a[:, :width], b[:, :width])
            assert not a[:, width:].any() and not b[:, width:].any()
    # Fewer decoder steps in all: the long source no longer pads its target.
    steps = sum(own[i][1].size for i in range(len(own)))
    assert steps < sum(plain[i][1].size for i in range(len(plain)))


def test_bpe_dropout_resamples_every_epoch():
    pairs = [
        ("die neuesten Häuser sind größer", "the newest houses are bigger"),
        ("die älteren Häuser sind kleiner", "the older houses are smaller"),
    ] * 4
    source = BpeTokenizer(max_vocab=60, seed=0).fit([de for de, _ in pairs])
    target = BpeTokenizer(max_vocab=60, seed=0).fit([en for _, en in pairs])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.data.TaggedBatches(model, pairs, 2, seed=0)
    data = recipe.data.TaggedBatches(model, pairs, 2, seed=0, bpe_dropout=0.5)
    assert source.dropout == target.dropout == 0.0  # off again after encoding
    epochs = []
    for _ in range(3):
        epochs.append(data.source.copy())
        rows = np.sort(np.concatenate(data.batches))  # every pair, in order
        for row in rows:
            ids = data.source[row][data.source[row] != 0].tolist()
            out = data.target_out[row][data.target_out[row] != 0].tolist()
            assert source.decode(ids) == pairs[row][0]  # a segmentation of it
            assert target.decode(out) == pairs[row][1]
        data.on_epoch_end()
    assert len({e.tobytes() for e in epochs}) > 1  # fresh segmentations
    assert max(e.shape[1] for e in epochs) > plain.source.shape[1]


def test_members_already_trained_are_reused_as_one_ensemble(tmp_path, capsys):
    pairs = [("ein Haus", "a house"), ("ein Baum", "a tree"), ("kein Haus", "no house")]
    source = WordTokenizer().fit([de for de, _ in pairs])
    target = WordTokenizer().fit([en for _, en in pairs])
    argv = ["--members", "2", "--members-dir", str(tmp_path), "--quick"]
    args = recipe.options.parse_args(argv)
    member = Translator(source, target, embedding_dim=4, units=4)
    member(member.encode_pairs(["ein Haus"], ["a house"])[0])  # builds it
    for index in range(2):  # one translator, saved as both members
        folder = recipe.members.member_argv(args, argv, index)[-1]
        metrics = {
            "epochs_run": 3 + index,
            "best_val_loss": 1.5 - index,
            "train_seconds": 60.0 * (index + 1),
            "stopped_by_time_budget": index == 1,
            "test_greedy_bleu": 10.0 + index,
            "test_greedy_by_source_length": {},
            "test_greedy_sentences_per_second": 100.0,
        }
        member.save_to_preset(
            folder,
            metadata={
                "command": f"train.py --seed {1 + index}",
                "seed": 1 + index,
                "search": {"length_penalty": 0.6 * index},
                "metrics": metrics,
                "data": "the data",
                "data_license": "the licence",
            },
        )
    model, metrics, data, license = recipe.members.train_members(args, argv)
    assert capsys.readouterr().out.count("reusing the preset") == 2
    assert type(model).__name__ == "TranslatorEnsemble" and len(model.members) == 2
    assert (data, license) == ("the data", "the licence")
    assert metrics["epochs_run"] == [3, 4] and metrics["best_val_loss"] == [1.5, 0.5]
    assert metrics["train_seconds"] == 120.0  # side by side: the slowest
    assert metrics["stopped_by_time_budget"] is True
    assert metrics["members"] == [
        {
            "command": f"train.py --seed {1 + i}",
            "seed": 1 + i,
            "test_greedy_bleu": 10.0 + i,
            "search": {"length_penalty": 0.6 * i},
        }
        for i in range(2)
    ]
    # The weights are rounded to float16, as the preset stores them.
    for weight in model.get_weights():
        np.testing.assert_array_equal(
            weight, weight.astype("float16").astype(weight.dtype)
        )


# --- A quick run of the whole recipe -------------------------------------------------
SUBJECTS = [
    ("Der Hund", "The dog"),
    ("Die Katze", "The cat"),
    ("Das Kind", "The child"),
    ("Der Mann", "The man"),
    ("Die Frau", "The woman"),
    ("Der Lehrer", "The teacher"),
    ("Die Ärztin", "The doctor"),
    ("Der Bauer", "The farmer"),
    ("Das Mädchen", "The girl"),
    ("Der Junge", "The boy"),
]
VERBS = [
    ("sieht", "sees"),
    ("mag", "likes"),
    ("hat", "has"),
    ("sucht", "looks for"),
    ("findet", "finds"),
    ("kennt", "knows"),
    ("malt", "paints"),
    ("kauft", "buys"),
    ("braucht", "needs"),
    ("holt", "fetches"),
]
OBJECTS = [
    ("Ball {m}", "den Ball", "ball", "the ball"),
    ("Buch {n}", "das Buch", "book", "the book"),
    ("Apfel {m}", "den Apfel", "apple", "the apple"),
    ("Tür {f}", "die Tür", "door", "the door"),
    ("Haus {n}", "das Haus", "house", "the house"),
    ("Baum {m}", "den Baum", "tree", "the tree"),
    ("Blume {f}", "die Blume", "flower", "the flower"),
    ("Stuhl {m}", "den Stuhl", "chair", "the chair"),
    ("Auto {n}", "das Auto", "car", "the car"),
    ("Uhr {f}", "die Uhr", "clock", "the clock"),
    ("Hut {m}", "den Hut", "hat", "the hat"),
    ("Brot {n}", "das Brot", "bread", "the bread"),
    ("Lampe {f}", "die Lampe", "lamp", "the lamp"),
    ("Tisch {m}", "den Tisch", "table", "the table"),
    ("Bild {n}", "das Bild", "picture", "the picture"),
    ("Tasse {f}", "die Tasse", "cup", "the cup"),
    ("Schuh {m}", "den Schuh", "shoe", "the shoe"),
]


def invented_dictionary():
    """1,700 lines in the format of Debian's usr/share/trans/de-en: a word and
    an example sentence each (1,700 sentence pairs, enough for the canonical
    split's 1000 test and 500 validation pairs, and 17 lexicon words)."""
    lines = ["# Version :: invented for the tests"]
    for de_subject, en_subject in SUBJECTS:
        for de_verb, en_verb in VERBS:
            for word, de_object, en_word, en_object in OBJECTS:
                lines.append(
                    f"{word} | {de_subject} {de_verb} {de_object}. :: "
                    f"{en_word} | {en_subject} {en_verb} {en_object}."
                )
    return "\n".join(lines) + "\n"


@pytest.fixture
def dictionary(tmp_path, monkeypatch):
    """The invented dictionary where the loaders look: the cache (the system
    root is an empty folder, whatever this machine has installed)."""
    monkeypatch.setenv("KERAS_RNNATTN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sources, "SYSTEM_ROOT", tmp_path / "root")
    path = tmp_path / "cache" / "trans-de-en" / "usr" / "share" / "trans" / "de-en"
    path.parent.mkdir(parents=True)
    path.write_text(invented_dictionary(), encoding="utf-8")
    return path


@pytest.mark.slow
def test_quick_run_writes_a_preset_with_its_metrics(dictionary, tmp_path, capsys):
    out = tmp_path / "preset"
    argv = ["--quick", "--members", "1", "--lexicon", "100", "--out", str(out)]
    assert recipe.train.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| preset | attention | decoding | BLEU |" in printed
    assert f"preset: {out}" in printed
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["command"].endswith(" ".join(argv))
    assert "Each epoch also 100 random pairs" in metadata["data"]
    metrics = metadata["metrics"]
    assert metrics["epochs_run"] == 1
    tried = metrics["validation_length_penalty_bleu_plus_chrf"]
    assert list(tried) == ["0.0", "0.6", "1.0", "1.2", "1.4"]
    assert metadata["search"] == {
        "length_penalty": max(map(float, tried), key=lambda a: tried[str(a)])
    }
    assert "beam_length_penalty" not in metrics
    for decoding in ("greedy", "beam4"):
        assert 0 <= metrics[f"test_{decoding}_bleu"] <= 100
        buckets = metrics[f"test_{decoding}_by_source_length"]
        assert (
            set(buckets) <= {"1-5", "6-8"}
            and sum(b["sentences"] for b in buckets.values()) == 20
        )  # the quick run's test slice
    assert np.isfinite(metrics["test_perplexity"])
    # The preset loads and translates the probe texts as recorded.
    model = Translator.from_preset(str(out))
    assert model.translate(metadata["probe_texts"]) == metadata["probe_greedy"]
    assert os.path.isfile(out / "model.weights.h5")
