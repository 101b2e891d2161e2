"""The shipped `diacritics_cs` preset: pinned outputs, only marks added, its
held-out lines and scores beside the lexicon, its size and the command line."""

import subprocess
import sys
from pathlib import Path

import pytest

from keras_rnnattn.datasets import DatasetNotFoundError, load_czech_text
from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import strip_diacritics
from tests.backends import on_one_backend
from tests.shipped import preset_fixtures

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / "saved_models" / "diacritics_cs"


metadata, model = preset_fixtures(FOLDER, SequenceTagger)


def test_reproduces_pinned_restorations(model, metadata):
    assert (
        model.restore_diacritics(metadata["probe_texts"])
        == (metadata["probe_restored"])
    )
    stripped = [strip_diacritics(t) for t in metadata["test_slice_texts"]]
    restored = model.restore_diacritics(stripped)
    assert restored == metadata["test_slice_restored"]
    for text, out in zip(stripped, restored):
        assert strip_diacritics(out) == text  # only marks on letters change


def test_everyday_sentences_get_their_marks(model):
    assert model.restore_diacritics(
        ["Stastny novy rok a hodne zdravi!", "Kolik to stoji?"]
    ) == ["Šťastný nový rok a hodně zdraví!", "Kolik to stojí?"]
    # Capitals, digits, punctuation and the marks already typed are kept.
    out = model.restore_diacritics("DEKUJI, uz 3x jsem to zkousel :-) ráno")
    assert strip_diacritics(out) == "DEKUJI, uz 3x jsem to zkousel :-) rano"
    assert out.endswith(":-) ráno") and out.startswith("DĚKUJ")


@on_one_backend
def test_held_out_lines_are_the_loaders_and_it_beats_the_lexicon(metadata):
    try:
        test = load_czech_text("test")
    except DatasetNotFoundError as error:
        pytest.skip(f"corpus not installed: {error}")
    from applications.diacritics_cs import evaluation

    first = [
        line for docs in test.values() for line in evaluation.held_out_lines(docs)[:10]
    ]
    assert first == metadata["test_slice_texts"]
    metrics = metadata["metrics"]
    lexicon = metrics["peers"]["lexicon"]["test"]
    for name in ("fortunes_cs", "libreoffice_help_cs", "all"):
        ours = metrics["test"][name]
        assert ours["words"] == lexicon[name]["words"]
        assert ours["marked_word_accuracy"] > lexicon[name]["marked_word_accuracy"]


@on_one_backend
def test_fits_a_few_megabytes_and_stores_float16(metadata):
    assert metadata["weights_dtype"] == "float16"
    assert (FOLDER / "model.weights.h5").stat().st_size <= 4 * 10**6


@on_one_backend
def test_the_command_line_default_restores_lines_from_stdin(metadata):
    done = subprocess.run(
        [sys.executable, "-m", "keras_rnnattn.cli", "diacritics"],
        input="Stastny novy rok a hodne zdravi!\n\nkdy prijdes domu\n",
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "Šťastný nový rok a hodně zdraví!" and lines[1] == ""
    assert strip_diacritics(lines[2]) == "kdy prijdes domu"
