"""Tests of the presets shipped in saved_models/: they load and reproduce their run."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    install_command,
    load_ding_de_en,
    load_movie_snippets,
    load_wordnet_topics,
    load_world_english_bible,
)
from keras_rnnattn.metrics import bleu, chrf
from keras_rnnattn.models import AttentionClassifier, AttentiveLanguageModel, Translator
from keras_rnnattn.text import BpeTokenizer, WordTokenizer

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "saved_models"
MAX_BYTES = 20 * 2**20

# Probabilities agree across backends to ~1e-6; leave room for float order.
PROB_ATOL = 1e-4


def _preset(name):
    folder = SAVED / name
    if not (folder / "config.json").is_file():
        pytest.skip(f"preset {name} is not shipped in {SAVED}")
    return folder


def _metadata(folder):
    return json.loads((folder / "metadata.json").read_text(encoding="utf-8"))


def _corpus(loader, name, split):
    try:
        return loader(split)
    except DatasetNotFoundError:
        pytest.skip(f"corpus not installed: {install_command(name)}")


def _recipe(name):
    """The recipe module `applications/<name>/train.py`, imported under its own name."""
    spec = importlib.util.spec_from_file_location(
        f"recipe_{name}", ROOT / "applications" / name / "train.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shipped():
    if not SAVED.is_dir():
        return []
    return sorted(p.name for p in SAVED.iterdir() if (p / "config.json").is_file())


@pytest.mark.parametrize("name", _shipped())
def test_preset_is_small_and_complete(name):
    folder = SAVED / name
    metadata = _metadata(folder)
    total = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    assert total < MAX_BYTES, f"{name} is {total / 2**20:.1f} MB"
    for key in ("description", "data", "data_license", "command", "metrics"):
        assert metadata.get(key), f"{name}: metadata has no {key!r}"
    assert metadata["command"].startswith("python applications/")


# --- movie_snippets_sentiment ----------------------------------------------------
def test_sentiment_reproduces_pinned_probabilities():
    folder = _preset("movie_snippets_sentiment")
    metadata = _metadata(folder)
    model = AttentionClassifier.from_preset(str(folder))
    labels, probs = model.classify(metadata["probe_texts"])
    pinned = np.array(metadata["probe_probabilities"])
    np.testing.assert_allclose(probs, pinned, atol=PROB_ATOL)
    assert labels == [model.labels[i] for i in pinned.argmax(axis=-1)]
    # A clearly positive and a clearly negative probe land on their side.
    assert labels[0] == "positive" and labels[1] == "negative"


def test_sentiment_accuracy_on_test_slice():
    folder = _preset("movie_snippets_sentiment")
    metadata = _metadata(folder)
    texts, labels = _corpus(load_movie_snippets, "movie_snippets", "test")
    model = AttentionClassifier.from_preset(str(folder))
    probs = model.predict(texts[:200], batch_size=200, verbose=0)
    accuracy = float(np.mean(probs.argmax(axis=-1) == labels[:200]))
    assert accuracy == pytest.approx(
        metadata["metrics"]["test_accuracy_first_200"], abs=1e-9
    )


# --- wordnet_topics ------------------------------------------------------------------
def test_wordnet_topics_reproduces_pinned_probabilities():
    folder = _preset("wordnet_topics")
    metadata = _metadata(folder)
    model = AttentionClassifier.from_preset(str(folder))
    _, probs = model.classify(metadata["probe_texts"])
    np.testing.assert_allclose(
        probs, np.array(metadata["probe_probabilities"]), atol=PROB_ATOL
    )


def test_wordnet_topics_accuracy_on_test_slice():
    folder = _preset("wordnet_topics")
    metadata = _metadata(folder)
    texts, labels = _corpus(load_wordnet_topics, "wordnet_topics", "test")
    model = AttentionClassifier.from_preset(str(folder))
    probs = model.predict(texts[:500], batch_size=500, verbose=0)
    accuracy = float(np.mean(probs.argmax(axis=-1) == labels[:500]))
    assert accuracy == pytest.approx(
        metadata["metrics"]["test_accuracy_first_500"], abs=1e-9
    )
    assert (
        metadata["metrics"]["test_accuracy"]
        > metadata["metrics"]["tfidf_logreg_accuracy"]
    )


# --- web_bible_char_lm ------------------------------------------------------------
def test_char_lm_reproduces_pinned_generations():
    folder = _preset("web_bible_char_lm")
    metadata = _metadata(folder)
    model = AttentiveLanguageModel.from_preset(str(folder))
    greedy = model.generate(metadata["probe_prompts"], max_length=40, temperature=0)
    assert greedy == metadata["probe_greedy"]


def test_char_lm_perplexity_on_test_slice():
    folder = _preset("web_bible_char_lm")
    metadata = _metadata(folder)
    recipe = _recipe("web_bible_char_lm")
    SLICE, pieces = recipe.SLICE, recipe.pieces  # noqa: N806
    text = _corpus(load_world_english_bible, "world_english_bible", "test")
    model = AttentiveLanguageModel.from_preset(str(folder))
    texts = pieces(text, model.max_length - 1)[:SLICE]
    metrics = metadata["metrics"]
    assert model.perplexity(texts, batch_size=SLICE) == pytest.approx(
        metrics[f"test_slice_perplexity_first_{SLICE}"], rel=1e-4
    )
    assert (
        metrics["attention_test_perplexity"] < metrics["no_attention_test_perplexity"]
    )


# --- ding_de_en_bahdanau ---------------------------------------------------------
def test_translator_reproduces_pinned_translations():
    folder = _preset("ding_de_en_bahdanau")
    metadata = _metadata(folder)
    model = Translator.from_preset(str(folder))
    assert model.translate(metadata["probe_texts"]) == metadata["probe_greedy"]


def test_translator_scores_on_test_slice():
    folder = _preset("ding_de_en_bahdanau")
    metadata = _metadata(folder)
    pairs = _corpus(load_ding_de_en, "ding_de_en", "test")[:20]
    model = Translator.from_preset(str(folder))
    hypotheses = model.translate([de for de, _ in pairs])
    references = [en for _, en in pairs]
    assert not any("<unk>" in h for h in hypotheses)
    assert chrf(hypotheses, references) == pytest.approx(
        metadata["test_slice_greedy_chrf"], abs=1e-6
    )
    assert bleu(hypotheses, references) == pytest.approx(
        metadata["test_slice_greedy_bleu"], abs=1e-6
    )


# --- The recipes, as smoke runs ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "recipe, corpus",
    [
        ("movie_snippets_sentiment", "movie_snippets"),
        ("ding_de_en_bahdanau", "ding_de_en"),
        ("wordnet_topics", "wordnet_topics"),
        ("web_bible_char_lm", "world_english_bible"),
    ],
)
def test_recipe_quick_run(recipe, corpus, tmp_path):
    loader = {
        "movie_snippets": load_movie_snippets,
        "ding_de_en": load_ding_de_en,
        "wordnet_topics": load_wordnet_topics,
        "world_english_bible": load_world_english_bible,
    }
    _corpus(loader[corpus], corpus, "test")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, str(ROOT / "applications" / recipe / "train.py"), "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| preset |" in result.stdout
    folder = Path(result.stdout.split("preset: ")[-1].splitlines()[0])
    assert (folder / "model.weights.h5").is_file()
    assert json.loads((folder / "metadata.json").read_text())["metrics"]


def test_ding_recipe_member_command_lines():
    recipe = _recipe("ding_de_en_bahdanau")
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
    args = recipe.parse_args(argv)
    assert args.members == 2  # an ensemble by default
    assert recipe._member_argv(args, argv, 1) == [
        "--lexicon=100",
        "--tag",
        "--members",
        "1",
        "--seed",
        "6",
        "--out",
        os.path.join("/m", "member_2"),
    ]
    assert recipe.parse_args(["--members", "1"]).members_dir is None


def test_ding_recipe_members_share_one_compilation_cache(monkeypatch):
    recipe = _recipe("ding_de_en_bahdanau")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    env = recipe._member_env("/m")
    assert env["JAX_COMPILATION_CACHE_DIR"] == os.path.join("/m", "compilation_cache")
    assert env["OMP_NUM_THREADS"] == env["TF_NUM_INTRAOP_THREADS"] == "1"
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    # A cache the user named (shared by several runs) is kept.
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/shared/cache")
    assert recipe._member_env("/m")["JAX_COMPILATION_CACHE_DIR"] == "/shared/cache"


def test_ding_recipe_input_feeding_flag():
    recipe = _recipe("ding_de_en_bahdanau")
    args = recipe.parse_args([])
    assert args.input_feeding
    assert "and input feeding" in recipe.describe_model(args)
    args = recipe.parse_args(["--no-input-feeding"])
    assert not args.input_feeding
    assert "(no input feeding)" in recipe.describe_model(args)
    # Members inherit it.
    argv = ["--no-input-feeding", "--members-dir", "/m"]
    member = recipe._member_argv(recipe.parse_args(argv), argv, 0)
    assert not recipe.parse_args(member).input_feeding


@pytest.mark.parametrize(
    "flag, default, value, described, off_word, bad",
    [
        ("fixnorm", 3.5, 2.0, ", fixnorm 2.0 output layer", "fixnorm", ["-1"]),
        ("ema", 0.999, 0.99, ", weights averaged (EMA 0.99)", "EMA", ["1", "-0.5"]),
    ],
)
def test_ding_recipe_off_by_zero_flags(flag, default, value, described, off_word, bad):
    """--fixnorm and --ema: the preset's value by default, 0 turns them off
    (None), the description says which, bad values are refused and members
    inherit them, off included."""
    recipe = _recipe("ding_de_en_bahdanau")
    assert getattr(recipe.parse_args([]), flag) == default  # the preset's
    args = recipe.parse_args([f"--{flag}", "0"])
    assert getattr(args, flag) is None
    assert off_word not in recipe.describe_model(args)
    args = recipe.parse_args([f"--{flag}", str(value)])
    assert getattr(args, flag) == value
    assert described in recipe.describe_model(args)
    for item in bad:
        with pytest.raises(SystemExit):
            recipe.parse_args([f"--{flag}", item])
    for given, expected in ((str(value), value), ("0", None)):
        argv = [f"--{flag}", given, "--members-dir", "/m"]
        member = recipe._member_argv(recipe.parse_args(argv), argv, 0)
        assert getattr(recipe.parse_args(member), flag) == expected


@pytest.mark.parametrize(
    "schedule, expected",
    [
        ("linear", [4e-3, 3e-3, 2e-3, 1e-3]),  # (epochs - k) / epochs of the peak
        # Halved at the end of each epoch whose validation loss did not improve
        # (the first to stall is epoch 1), so from epoch 2 on.
        ("plateau", [4e-3, 4e-3, 2e-3, 1e-3]),
    ],
)
def test_ding_recipe_learning_rate_schedules(schedule, expected):
    import keras

    recipe = _recipe("ding_de_en_bahdanau")
    args = recipe.parse_args(
        ["--schedule", schedule, "--epochs", "4", "--learning-rate", "4e-3"]
        + ["--ema", "0"]  # the plain weights: SGD keeps no average here
    )
    budget, stop, callbacks = recipe.training_callbacks(args)
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
def test_ding_recipe_ema_validates_and_keeps_the_average(stop_after):
    """With --ema the validation loss is of the averaged weights and training
    ends holding them, also when it stops before the last planned epoch (as
    the clock stops it); checked against plain SGD and the EMA in NumPy."""
    import keras

    recipe = _recipe("ding_de_en_bahdanau")
    args = recipe.parse_args(
        "--ema 0.5 --schedule linear --epochs 4 --learning-rate 0.1".split()
    )
    _, _, callbacks = recipe.training_callbacks(args)
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


def test_ding_recipe_tags_only_auxiliary_sources():
    recipe = _recipe("ding_de_en_bahdanau")
    sentences = [("a b c", "x y"), ("b c", "y z"), ("c a b a", "z")]  # last: extra data
    lexicon = [("a", "x"), ("b c", "y y")]
    source = WordTokenizer().fit([de for de, _ in sentences + lexicon])
    target = WordTokenizer().fit([en for _, en in sentences + lexicon])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.Batches(
        model, sentences, 2, seed=0, extra=lexicon, extra_per_epoch=2
    )
    tagged = recipe.Batches(
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


def test_ding_recipe_refuses_inconsistent_options(capsys):
    recipe = _recipe("ding_de_en_bahdanau")
    for argv, message in (
        (["--share-embeddings"], "add --joint-bpe"),
        (["--target-multiple", "0"], "--target-multiple must be at least 1"),
    ):
        with pytest.raises(SystemExit):
            recipe.parse_args(argv)
        assert message in capsys.readouterr().err
    args = recipe.parse_args(["--joint-bpe", "--share-embeddings"])
    assert args.share_embeddings and args.target_multiple is None


def test_ding_recipe_pads_targets_to_their_own_multiple():
    recipe = _recipe("ding_de_en_bahdanau")
    pairs = [("a b c d e f g h i j", "x"), ("a b", "x y z"), ("a", "x y")] * 2
    source = WordTokenizer().fit([de for de, _ in pairs])
    target = WordTokenizer().fit([en for _, en in pairs])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.Batches(model, pairs, 2, seed=0, shuffle=False)
    own = recipe.Batches(model, pairs, 2, seed=0, shuffle=False, target_multiple=4)
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


def test_ding_recipe_bpe_dropout_resamples_every_epoch():
    recipe = _recipe("ding_de_en_bahdanau")
    pairs = [
        ("die neuesten Häuser sind größer", "the newest houses are bigger"),
        ("die älteren Häuser sind kleiner", "the older houses are smaller"),
    ] * 4
    source = BpeTokenizer(max_vocab=60, seed=0).fit([de for de, _ in pairs])
    target = BpeTokenizer(max_vocab=60, seed=0).fit([en for _, en in pairs])
    model = Translator(source, target, embedding_dim=4, units=4)
    plain = recipe.Batches(model, pairs, 2, seed=0)
    data = recipe.Batches(model, pairs, 2, seed=0, bpe_dropout=0.5)
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
