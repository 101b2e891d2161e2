"""`generate()` with keras-hub's shape and `compile(sampler=...)`, on the presets."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_rnnattn.models import AttentiveLanguageModel, Translator

SOURCES = [
    "Ich habe keine Zeit.",
    "Das Haus ist groß.",
    "Wo ist der Bahnhof?",
    "Er kommt morgen.",
]
PROMPTS = ["In the beginning", "And God said", "The LORD"]


@pytest.fixture(scope="module")
def translator():
    return Translator.from_preset("ding_de_en_bahdanau")


@pytest.fixture(scope="module")
def lm():
    return AttentiveLanguageModel.from_preset("web_bible_char_lm")


def test_translator_generate_follows_the_compiled_sampler(translator):
    translator.compile()
    greedy = translator.translate(SOURCES)
    assert translator.generate(SOURCES) == greedy
    assert translator.generate(SOURCES[0]) == greedy[0]
    assert translator.generate([]) == []
    short = translator.translate(SOURCES, max_length=3)
    assert translator.generate(SOURCES, max_new_tokens=3) == short
    assert translator.generate(SOURCES, max_length=3) == short
    translator.compile(sampler="beam")  # this library's beam search, 5 beams
    assert translator.generate(SOURCES) == translator.translate(SOURCES, beam_size=5)
    # keras-hub's samplers run their own loop over next_fn: its greedy sampler
    # and a top-k sampler with k = 1 give the greedy translations.
    translator.compile(sampler=keras_hub.samplers.GreedySampler())
    assert translator.generate(SOURCES) == greedy
    translator.compile(sampler=keras_hub.samplers.TopKSampler(k=1, seed=0))
    assert translator.generate(SOURCES) == greedy
    # Sampling draws from the model: other texts than greedy, repeatable.
    translator.compile(sampler="random")
    keras.utils.set_random_seed(0)
    first = translator.generate(SOURCES * 3)
    keras.utils.set_random_seed(0)
    assert translator.generate(SOURCES * 3) == first
    assert first != greedy * 3
    translator.compile()


def test_generate_arguments_are_checked(translator, lm):
    with pytest.raises(ValueError, match="not both"):
        translator.generate(SOURCES, max_length=3, max_new_tokens=3)
    with pytest.raises(ValueError, match=r"sampler` must be one of .*'top_p'"):
        translator.compile(sampler="nucleus")
    with pytest.raises(ValueError, match="keras_hub.samplers.Sampler"):
        lm.compile(sampler=3)
    with pytest.raises(ValueError, match=r"whole sequence.*\[18, 128\]"):
        lm.generate("In the beginning", max_length=10)
    translator.compile()


def test_language_model_max_length_counts_the_whole_sequence(lm):
    lm.compile(sampler="greedy")
    prompt = "In the beginning"  # 16 characters, 17 tokens with the begin token
    whole = lm.generate(prompt, max_length=27)
    assert len(whole) == 26 and whole.startswith(prompt)
    assert whole == lm.generate(prompt, max_new_tokens=10)
    assert whole == lm.generate(prompt, max_new_tokens=10, temperature=0)
    assert lm.generate(prompt, max_new_tokens=10, strip_prompt=True) == whole[16:]
    # Prompts of different lengths: each row stops at max_length.
    rows = lm.generate(PROMPTS, max_length=27)
    assert [len(r) for r in rows] == [26] * 3
    assert rows == [lm.generate(p, max_length=27) for p in PROMPTS]
    # keras-hub's greedy sampler over the same prompts.
    lm.compile(sampler=keras_hub.samplers.GreedySampler())
    assert lm.generate(PROMPTS, max_length=27) == rows
    lm.compile()


def test_language_model_samplers(lm):
    lm.compile(sampler="beam")
    prompt_ids = [int(lm.tokenizer.bos_id)] + lm.tokenizer.encode(PROMPTS[0])
    ids = np.array([prompt_ids], "int32")
    beam, beam_score = lm.generate_ids(ids, max_length=12, beam_size=5)
    greedy, greedy_score = lm.generate_ids(ids, max_length=12)
    assert beam_score[0] >= greedy_score[0] - 1e-4
    text = lm.generate(PROMPTS[0], max_new_tokens=12, strip_prompt=True)
    eos = int(lm.tokenizer.eos_id)
    row = beam[0].tolist()
    assert text == lm.tokenizer.decode(row[: row.index(eos)] if eos in row else row)
    lm.compile(sampler="top_k")  # k = 5: every token among the 5 most likely
    keras.utils.set_random_seed(3)
    sampled = lm.generate(PROMPTS, max_new_tokens=8, strip_prompt=True)
    keras.utils.set_random_seed(3)
    assert lm.generate(PROMPTS, max_new_tokens=8, strip_prompt=True) == sampled
    # Arguments given to generate win over the compiled sampler.
    assert lm.generate(PROMPTS[0], max_new_tokens=8, temperature=0) == lm.generate(
        PROMPTS[0], max_new_tokens=8, top_k=1
    )
    lm.compile()
