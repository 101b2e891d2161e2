"""Tests of the presets shipped in saved_models/: they load and reproduce their run."""

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    install_command,
    load_cmudict,
    load_ding_de_en,
    load_misaki_lexicon,
    load_movie_snippets,
    load_wordnet_topics,
    load_world_english_bible,
)
from keras_rnnattn.metrics import bleu, chrf, word_error_rate
from keras_rnnattn.models import (
    AttentionClassifier,
    AttentiveLanguageModel,
    Translator,
)

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
    """The recipe module `applications/<name>/train.py`."""
    return importlib.import_module(f"applications.{name}.train")


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
    greedy = model.generate(metadata["probe_prompts"], max_new_tokens=40, temperature=0)
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


def test_translator_keeps_emoji_it_cannot_read():
    # An emoji is no word of the Ding vocabulary: fed to the model, it ended
    # the translation ("I love"); now it is left out of the input and put back
    # after the word attended to where it stood.
    model = Translator.from_preset(str(_preset("ding_de_en_bahdanau")))
    text = "Ich liebe 🍕 und Käse 😀"
    assert model.translate(text) == "I love 🍕 and Case 😀"
    assert model.translate(text, beam_size=4) == "I love 🍕 and Case 😀"
    assert model.translate("😀") == "😀"


# --- cmudict_g2p -------------------------------------------------------------------
def test_g2p_reproduces_pinned_pronunciations():
    folder = _preset("cmudict_g2p")
    metadata = _metadata(folder)
    model = Translator.from_preset(str(folder))
    assert model.translate(metadata["probe_texts"]) == metadata["probe_greedy"]
    assert (
        model.translate(metadata["test_slice_words"]) == metadata["test_slice_greedy"]
    )


def test_g2p_test_slice_is_the_loaders_and_mostly_right():
    folder = _preset("cmudict_g2p")
    metadata = _metadata(folder)
    words, pronunciations = _corpus(load_cmudict, "cmudict", "test")
    count = len(metadata["test_slice_words"])
    assert words[:count] == metadata["test_slice_words"]
    wer = word_error_rate(metadata["test_slice_greedy"], pronunciations[:count])
    # The whole test split's greedy WER, within what 50 words can wander.
    assert wer == pytest.approx(metadata["metrics"]["test_greedy_wer"], abs=15)
    metrics = metadata["metrics"]
    assert metrics["test_greedy_wer"] < metrics["no_attention_test_greedy_wer"]


@pytest.mark.parametrize("name", ["cmudict_g2p", "misaki_us_g2p", "misaki_gb_g2p"])
def test_g2p_presets_read_letters_with_marks_as_their_base_letters(name):
    from keras_rnnattn.models import Translator

    folder = _preset(name)
    model = Translator.from_preset(folder)
    assert model.source_tokenizer.fold_letters
    marked, plain = ["café", "naïve", "Zoë"], ["cafe", "naive", "Zoe"]
    assert model.translate(marked) == model.translate(plain)


def test_g2p_cli_pronounces_words_with_the_default_preset(capsys):
    folder = _preset("cmudict_g2p")
    metadata = _metadata(folder)
    from keras_rnnattn import cli

    words = metadata["probe_texts"][:2]
    assert cli.main(["pronounce", " ".join(w.upper() for w in words)]) == 0
    expected = [f"{w} {p}" for w, p in zip(words, metadata["probe_greedy"])]
    assert capsys.readouterr().out.splitlines() == expected


# --- The recipes, as smoke runs ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "recipe, corpus",
    [
        ("movie_snippets_sentiment", "movie_snippets"),
        ("ding_de_en_bahdanau", "ding_de_en"),
        ("wordnet_topics", "wordnet_topics"),
        ("web_bible_char_lm", "world_english_bible"),
        ("cmudict_g2p", "cmudict"),
        ("misaki_us_g2p", "misaki"),
        ("web_bible_punctuation", "world_english_bible"),
    ],
)
def test_recipe_quick_run(recipe, corpus, tmp_path):
    loader = {
        "movie_snippets": load_movie_snippets,
        "ding_de_en": load_ding_de_en,
        "wordnet_topics": load_wordnet_topics,
        "world_english_bible": load_world_english_bible,
        "cmudict": load_cmudict,
        "misaki": load_misaki_lexicon,
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
    # A Markdown table of the results (its first column: preset, system or model).
    assert re.search(r"^\| (preset|system|model) \|", result.stdout, re.M)
    folder = Path(result.stdout.split("preset: ")[-1].splitlines()[0])
    assert (folder / "model.weights.h5").is_file()
    assert json.loads((folder / "metadata.json").read_text())["metrics"]


# --- Loading without TensorFlow ---------------------------------------------------
NO_TF_SCRIPT = """
import json, sys, time
import keras_rnnattn.models
from keras_rnnattn.presets.mixin import PresetMixin
assert "tensorflow" not in sys.modules, "imported by keras_rnnattn.models"
times = {}
for name in sys.argv[1:]:
    start = time.perf_counter()
    PresetMixin.from_preset(name)
    times[name] = time.perf_counter() - start
    assert "tensorflow" not in sys.modules, f"imported while loading {name}"
print(json.dumps(times))
"""


@pytest.mark.parametrize(
    "backend", ["jax", pytest.param("torch", marks=pytest.mark.slow)]
)
def test_loading_shipped_presets_never_imports_tensorflow(backend):
    # Keras's `Bidirectional` copies its layer through serialize_keras_object,
    # which imports TensorFlow (seconds) when installed; the models avoid it.
    names = _shipped()
    if not names:
        pytest.skip(f"no preset is shipped in {SAVED}")
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(ROOT))
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    done = subprocess.run(
        [sys.executable, "-c", NO_TF_SCRIPT, *names],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    times = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(times) == names
    # Under 2 s each (benchmarks/preset_loading.py): 0.1-0.6 s measured; with
    # TensorFlow's import or JAX compiling every initializer, 2.5-11 s each.
    assert sum(times.values()) < 2.0 * len(names), times


# --- sacrebleu's signatures of the translation presets -------------------------------
BLEU_SIGNATURE = (
    r"nrefs:\d+\|case:(mixed|lc)\|eff:(yes|no)\|tok:[\w-]+\|smooth:\w+"
    r"\|version:\d+\.\d+\.\d+"
)
CHRF_SIGNATURE = (
    r"nrefs:\d+\|case:(mixed|lc)\|eff:(yes|no)\|nc:\d+\|nw:\d+\|space:(yes|no)"
    r"\|version:\d+\.\d+\.\d+"
)


def _translation_presets():
    """The presets scored with BLEU or chrF (a Translator scored otherwise, as
    the grapheme-to-phoneme one with word error rates, quotes no sacrebleu)."""
    names = []
    for name in _shipped():
        metadata = _metadata(SAVED / name)
        scored = " ".join(map(str, metadata.get("metrics", {}))).lower()
        if "bleu" in scored or "chrf" in scored:
            names.append(name)
    return names


def test_the_translation_presets_are_found():
    assert "ding_de_en_bahdanau" in set(_translation_presets())


@pytest.mark.parametrize("name", _translation_presets())
def test_translation_preset_records_sacrebleus_signatures(name):
    import re

    metadata = _metadata(SAVED / name)
    signatures = metadata.get("sacrebleu_signatures")
    assert isinstance(signatures, dict), f"{name}: no sacrebleu_signatures"
    assert re.fullmatch(BLEU_SIGNATURE, signatures["bleu"]), signatures["bleu"]
    assert re.fullmatch(CHRF_SIGNATURE, signatures["chrf"]), signatures["chrf"]
    # The model card of the recipe that trained it quotes both (escaped "|" in
    # a table cell is still the same text).
    application = metadata["command"].split("/")[1]
    card = (ROOT / "applications" / application / "README.md").read_text("utf-8")
    card = card.replace("\\|", "|")
    assert signatures["bleu"] in card and signatures["chrf"] in card
    assert name in card
