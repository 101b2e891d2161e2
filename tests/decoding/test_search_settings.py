"""`SearchSettings`: checked when made, read from presets, the same everywhere."""

import json
import os

import pytest

from keras_rnnattn.decoding.search_settings import SAMPLER_NAMES, SearchSettings
from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@on_one_backend
def test_defaults_and_beam_size_follow_the_method():
    assert SearchSettings().beam_size == 1
    assert SearchSettings("beam").beam_size == 4
    beam = SearchSettings("beam", beam_size=3, num_return_sequences=2)
    greedy = beam.replace(method="greedy")  # one sequence again
    assert (greedy.beam_size, greedy.num_return_sequences) == (1, 1)
    assert beam.replace(length_penalty=1).length_penalty == 1.0
    assert isinstance(beam.replace(length_penalty=1).length_penalty, float)
    with pytest.raises(dataclass_frozen_error()):
        beam.beam_size = 5


def dataclass_frozen_error():
    import dataclasses

    return dataclasses.FrozenInstanceError


@on_one_backend
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "nucleus"}, r"`method` must be one of .*method='nucleus'"),
        ({"beam_size": 0, "method": "beam"}, r"int >= 1\. Received: beam_size=0"),
        ({"beam_size": 2}, r"use method='beam'"),
        ({"length_penalty": float("nan")}, r"length_penalty=nan"),
        ({"length_penalty": "0.6"}, r"length_penalty='0.6'"),
        ({"coverage_penalty": -0.1}, r">= 0 .*coverage_penalty=-0.1"),
        ({"temperature": 0}, r"method='greedy' is the limit"),
        ({"top_k": 0}, r"top_k=0"),
        ({"top_p": 1.5}, r"\(0, 1\]\. Received: top_p=1.5"),
        ({"method": "beam", "num_return_sequences": 5}, r"raise `beam_size`"),
    ],
)
def test_bad_values_raise_one_error_naming_the_setting(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SearchSettings(**kwargs)


@on_one_backend
def test_replace_refuses_an_unknown_name():
    with pytest.raises(ValueError, match=r"no setting 'alpha'.*length_penalty"):
        SearchSettings().replace(alpha=1.2)


@on_one_backend
def test_sampler_names_dicts_and_settings():
    base = SearchSettings(length_penalty=1.2)
    beam = SearchSettings.from_sampler("beam", base)
    assert (beam.method, beam.beam_size, beam.length_penalty) == ("beam", 5, 1.2)
    assert SearchSettings.from_sampler("top_k").top_k == 5
    assert SearchSettings.from_sampler("top_p").top_p == 0.1
    assert SearchSettings.from_sampler("random").method == "sample"
    assert SearchSettings.from_sampler("greedy", beam) == base
    assert SearchSettings.from_sampler(None, base) is base
    assert SearchSettings.from_sampler({}, base) == base
    # The dicts samplers used to travel as.
    legacy = SearchSettings.from_sampler({"method": "beam", "beam_size": 5})
    assert legacy == SearchSettings("beam", beam_size=5)
    assert SearchSettings.from_sampler(beam) is beam
    assert set(SAMPLER_NAMES) == {"greedy", "beam", "top_k", "top_p", "random"}
    with pytest.raises(ValueError, match=r"sampler` must be one of .*'top_p'"):
        SearchSettings.from_sampler("nucleus")
    with pytest.raises(ValueError, match="keras_hub.samplers.Sampler"):
        SearchSettings.from_sampler(3)


@on_one_backend
def test_config_round_trip_is_plain_json():
    settings = SearchSettings("beam", beam_size=6, length_penalty=0.6, top_k=3)
    config = json.loads(json.dumps(settings.get_config()))
    assert SearchSettings.from_config(config) == settings
    assert list(config) == list(SearchSettings.names())


@on_one_backend
def test_metadata_of_the_shipped_presets_reads_unchanged():
    def metadata(name):
        path = os.path.join(REPO, "saved_models", name, "metadata.json")
        with open(path, encoding="utf-8") as file:
            return json.load(file)

    # The Ding recipe writes the beam's α it validated as `search`.
    for name, alpha in (("ding_de_en_bahdanau", 1.2),):
        ding = metadata(name)
        assert ding["search"] == {"length_penalty": alpha}
        assert SearchSettings.from_metadata(ding) == SearchSettings(
            length_penalty=alpha
        )
        assert "beam_length_penalty" not in ding["metrics"]  # the old key is gone
    assert SearchSettings.from_metadata(metadata("cmudict_g2p")) == SearchSettings()
    # Only `search` is read: keys under `metrics` are measurements.
    old = {"metrics": {"beam_length_penalty": 1.2}}
    assert SearchSettings.from_metadata(old) == SearchSettings()
    full = {"search": SearchSettings("beam", length_penalty=0.4).get_config()}
    assert SearchSettings.from_metadata(full).length_penalty == 0.4
    sampled = SearchSettings.from_metadata({}, SearchSettings("sample"))
    assert sampled.method == "sample"
    with pytest.raises(ValueError, match="coverage_penalty=-1"):
        SearchSettings.from_metadata({"search": {"coverage_penalty": -1}})


@on_one_backend
def test_docstring_examples_run():
    import doctest

    from keras_rnnattn.decoding import search_settings

    result = doctest.testmod(search_settings)
    assert result.attempted >= 5 and result.failed == 0
