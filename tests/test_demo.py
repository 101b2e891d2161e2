"""The README's demo: translates with the shipped preset and writes the heat map."""

import json
from pathlib import Path

import pytest

from keras_rnnattn import demo, presets

PRESET = Path(__file__).resolve().parents[1] / "saved_models" / demo.PRESET


@pytest.mark.skipif(
    not (PRESET / "config.json").is_file(), reason="the demo's preset is not shipped"
)
def test_demo_translates_with_the_preset(tmp_path, capsys):
    out = tmp_path / "attention.png"
    assert demo.main(["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Pretrained preset {demo.PRESET!r}" in printed
    assert printed.count("greedy:") == len(demo.GERMAN)
    # The beam uses the length penalty the preset's recipe picked on validation.
    metadata = json.loads((PRESET / "metadata.json").read_text())
    alpha = float(metadata["search"]["length_penalty"])
    assert presets.preset_length_penalty(demo.PRESET) == alpha
    assert printed.count(f"beam 4 (α = {alpha}):") == len(demo.GERMAN)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_fallback_date_translator_learns(capsys):
    model, test = demo.train_date_translator(seconds_budget=90)
    greedy = model.translate([s for s, _ in test])
    exact = sum(g == t for g, (_, t) in zip(greedy, test)) / len(test)
    assert exact >= 0.9
