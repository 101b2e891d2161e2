"""The GPU check (`scripts/gpu_check.py`) on the CPU: its reference values hold on
every backend, a failed check fails the run, and the whole check runs end to end."""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "scripts", "gpu_check.py")


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_values_hold_on_this_backend():
    # The reference was computed once on CPU (JAX); three decoder steps with
    # Bahdanau attention from its weights must give its numbers here too (the
    # slow test below runs every case).
    gpu_check = load_script()
    reference = dict(np.load(gpu_check.REFERENCE))
    names = ["decoder_step"]
    rows = gpu_check.check_numerics(reference, names)
    assert [row["check"] for row in rows] == names
    for row in rows:
        assert row["ok"], row
        assert row["max_abs_diff"] < 1e-5, row


def test_reference_values_detect_other_weights():
    # The comparison is not vacuous: other weights give other outputs.
    gpu_check = load_script()
    reference = dict(np.load(gpu_check.REFERENCE))
    for key in [k for k in reference if k.startswith("bahdanau/w/")]:
        reference[key] = reference[key] * 1.01
    (row,) = gpu_check.check_numerics(reference, ["bahdanau"])
    assert not row["ok"] and row["max_abs_diff"] > gpu_check.TOLERANCE


def test_a_failed_check_fails_the_run():
    gpu_check = load_script()
    good = {
        "info": {"backend": "jax"},
        "errors": [],
        "numerics_highest": [{"check": "bahdanau", "max_abs_diff": 0, "ok": True}],
        "decoding": [{"check": "greedy", "same": 8, "of": 8, "ok": True}],
        "bfloat16": {"ok": True},
    }
    assert not gpu_check.failed([good])
    wrong = dict(
        good, numerics_highest=[{"check": "b", "max_abs_diff": 1, "ok": False}]
    )
    assert gpu_check.failed([good, wrong])
    # Tokens that differ only at the default (TF32) precision are reported, not
    # failed; at the highest precision they fail.
    tf32 = dict(good, decoding=[{"check": "g", "same": 7, "of": 8, "ok": False}])
    assert gpu_check.failed([tf32])
    assert not gpu_check.failed([dict(tf32, decoding_highest=good["decoding"])])
    assert gpu_check.failed([dict(good, errors=["speed: RuntimeError"])])
    # Torch's report fails without its fused RNN operator's check or its
    # captured decoding loops' check, or with either failed.
    torch_good = dict(
        good,
        info={"backend": "torch"},
        fused_rnn=[{"check": "lstm", "max_abs_diff": 0, "ok": True}],
        decoding_captured=[{"check": "greedy", "same": 8, "of": 8, "ok": True}],
    )
    assert not gpu_check.failed([torch_good])
    for key in ("fused_rnn", "decoding_captured"):
        without = {k: v for k, v in torch_good.items() if k != key}
        assert gpu_check.failed([without])
    over = [{"check": "gru", "max_abs_diff": 1, "ok": False}]
    assert gpu_check.failed([dict(torch_good, fused_rnn=over)])
    other = [{"check": "greedy", "same": 7, "of": 8, "ok": False}]
    assert gpu_check.failed([dict(torch_good, decoding_captured=other)])


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="torch's operator")
def test_the_fused_rnn_check_compares_the_compiled_operator():
    # What the GPU machine runs for torch, on this CPU: the compiled operator's
    # output and gradients against eager `torch.lstm`/`torch.gru`.
    gpu_check = load_script()
    rows = gpu_check.check_fused_rnn()
    assert [row["check"] for row in rows] == ["lstm", "gru"]
    assert all(row["ok"] and row["max_abs_diff"] < 1e-5 for row in rows), rows


@on_one_backend
def test_the_driver_needs_no_installed_package(tmp_path):
    # The GPU machine has Keras from wheels but not keras-rnnattn installed: the
    # driver (which imports no Keras) must find the checkout's package itself.
    # `-S` leaves out site-packages, and with them this environment's install.
    result = subprocess.run(
        [sys.executable, "-S", SCRIPT, "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--backends" in result.stdout


@pytest.mark.slow
def test_the_whole_check_runs_on_cpu(tmp_path):
    # Every section at small sizes on this backend, the table written: what the
    # GPU machine runs, with the CPU fallback (about 2 minutes on JAX).
    backend = keras.backend.backend()
    out = tmp_path / "gpu_check.md"
    result = subprocess.run(
        [sys.executable, SCRIPT, "--quick", "--backends", backend, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = out.read_text()
    assert "FAIL" not in text and "Errors:" not in text
    assert "2/2 sentences the same tokens" in text
    assert f"| fast | {backend} | cpu |" in text
    # The verdicts come before the timings, so a worker out of time keeps them.
    (report,) = json.loads(out.with_suffix(".json").read_text())
    order = list(report["seconds"])
    assert order.index("numerics_highest") < order.index("throughput")
    assert order.index("bfloat16") < order.index("speed")
    if backend == "torch":
        assert order.index("decoding_captured") < order.index("throughput")
