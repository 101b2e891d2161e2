"""The shipped `punctuation_en` preset: pinned outputs, its card's comparisons,
its size, overlapping windows on long text, and the command line's default."""

from pathlib import Path

import pytest

from keras_rnnattn.datasets import DatasetNotFoundError
from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.models._punctuation_windows import tag_word_lists
from keras_rnnattn.models.punctuation_stream import PunctuationStream
from keras_rnnattn.text import SentencePieceTokenizer
from tests.backends import on_one_backend
from tests.shipped import preset_fixtures

FOLDER = Path(__file__).resolve().parents[1] / "saved_models" / "punctuation_en"
SOURCES = (
    "python_docs", "libreoffice_help", "fortunes", "lee_news", "nyt_editorials",
    "movie_reviews", "bible",
)  # fmt: skip


metadata, model = preset_fixtures(FOLDER, SequenceTagger)


def test_reproduces_pinned_restorations(model, metadata):
    assert (
        model.restore_punctuation(metadata["probe_texts"])
        == (metadata["probe_restored"])
    )
    assert (
        model.restore_punctuation(metadata["test_slice_texts"])
        == (metadata["test_slice_restored"])
    )


def test_a_recognisers_short_lines_are_one_sentence_each(model):
    # The lines that came back broken before lines were read as utterances
    # ("Where did? You put? My keys?", "Why is the sky? Blue?").
    lines = ["where did you put my keys", "why is the sky blue", "what time is it"]
    assert model.restore_punctuation(lines) == [
        "Where did you put my keys?",
        "Why is the sky blue?",
        "What time is it?",
    ]
    restored = model.restore_punctuation("can you send me the report before lunch")
    assert restored.count(".") + restored.count("?") == 1 and restored[-1] == "?"


def test_reads_subwords_with_attention_and_fits_its_size(model, metadata):
    assert isinstance(model.tokenizer, SentencePieceTokenizer)
    assert model.attention is not None and metadata["weights_dtype"] == "float16"
    assert (FOLDER / "model.weights.h5").stat().st_size <= 8 * 10**6
    # A word never in the training text keeps its pieces: no unknown id.
    assert model.tokenizer.unk_id not in model.tokenizer.encode("flibbertigibbet")


@on_one_backend
def test_card_numbers_are_scored_per_source_beside_the_peers(metadata):
    metrics = metadata["metrics"]
    test = metrics["test"]
    assert set(test) == {*SOURCES, "all"}
    assert sum(test[s]["words"] for s in SOURCES) == test["all"]["words"]
    assert metrics["test_overall_f1"] == test["all"]["overall"]["f1"]
    # The peers and the baseline were scored on the same words.
    for peer in ("crf", "web_bible_punctuation"):
        scores = metrics["peers"][peer]["test"]
        assert {s: scores[s]["words"] for s in scores} == {
            s: test[s]["words"] for s in test
        }
    no_attention = metrics["no_attention_test"]
    assert (
        no_attention["all"]["overall"]["support"] == (test["all"]["overall"]["support"])
    )
    # Modern text: ahead of the Bible-only tagger on every source but the Bible.
    bible_only = metrics["peers"]["web_bible_punctuation"]["test"]
    for source in SOURCES[:-1]:
        assert test[source]["overall"]["f1"] > bible_only[source]["overall"]["f1"]


@on_one_backend
def test_long_text_restores_alike_from_any_starting_word(model):
    """Overlapping windows, each word decided where it is central: a text
    restored from a later first word keeps the same tags for the words both
    restorations share (the windows differ, their central decisions agree)."""
    from applications.punctuation_en import corpus

    try:
        words = []
        for name in ("lee_news", "nyt_editorials", "fortunes"):
            words += corpus.tagged_source(name, "test")[0]
    except DatasetNotFoundError as error:
        pytest.skip(str(error))
    words = words[:5000]
    stream = PunctuationStream(model)
    window = stream.window

    def chunked(part):  # the other way: windows side by side, no overlap
        pieces = [part[i : i + window] for i in range(0, len(part), window)]
        return [t for tags in tag_word_lists(model, pieces, 64) for t in tags]

    whole, whole_chunked = stream.word_tags(words), chunked(words)
    for offset in (7, 20, 45):
        n = len(words) - offset - window  # the shifted text's first window aside

        def agreement(a, b, offset=offset, n=n):
            return sum(x == y for x, y in zip(a[offset + window :], b[window:])) / n

        central = agreement(whole, stream.word_tags(words[offset:]))
        side_by_side = agreement(whole_chunked, chunked(words[offset:]))
        assert central > 0.98 and central > side_by_side


def test_punctuate_cli_uses_punctuation_en_by_default(metadata, capsys):
    from keras_rnnattn import cli

    assert cli.main(["punctuate", metadata["probe_texts"][0].upper()]) == 0
    assert capsys.readouterr().out.splitlines() == metadata["probe_restored"][:1]
