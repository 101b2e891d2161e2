"""Training on 2 CPU devices gives the 1-device result: JAX DataParallel and
ModelParallel (LayoutMap), TensorFlow MirroredStrategy.

Each engine runs in a subprocess (`distributed_run.py`), since the number of
devices must be fixed before the backend starts. The tests run under their own
backend's suite and skip under the others.
"""

import functools
import json
import os
import subprocess
import sys

import keras
import pytest

from tests.compile_flags import TEST_XLA_FLAGS

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "distributed_run.py")
# Same initial weights, data, order and global batch: the runs differ only in
# how reductions are split across devices (float32 rounding). Measured: at most
# 1e-6 on the weights after 8 Adam steps that move them by 8e-3 to 1.1e-1.
WEIGHT_TOLERANCE = 1e-5
LOSS_TOLERANCE = 1e-5


def run(backend, task):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1")
    # The suite's compile flags (tests/compile_flags.py): both runs are
    # compiled alike (distributed_run.py adds the device count).
    env["XLA_FLAGS"] = TEST_XLA_FLAGS
    result = subprocess.run(
        [sys.executable, SCRIPT, backend, task],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_same_as_one_device(report):
    assert report["max_weight_change"] > 100 * WEIGHT_TOLERANCE  # it did train
    assert report["max_weight_diff"] < WEIGHT_TOLERANCE, report
    for one, two in zip(report["loss_one_device"], report["loss_two_devices"]):
        assert abs(one - two) < LOSS_TOLERANCE * max(1.0, abs(one)), report
    if "same_translations" in report:
        assert report["same_translations"]
    else:
        assert report["max_prediction_diff"] < WEIGHT_TOLERANCE


@functools.cache
def report(backend, task):
    """The subprocess's report for one task, run once per session."""
    return run(backend, task)


# The translator's run takes 45-85 s (its compiled train steps); the
# classifier's checks the same distribution mechanics in a fraction of it.
MODELS = [pytest.param("translator", marks=pytest.mark.slow), "classifier"]


jax_only = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="runs with the JAX backend's suite"
)
tensorflow_only = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="runs with the TensorFlow backend's suite",
)


@jax_only
@pytest.mark.parametrize("model", MODELS)
def test_jax_data_parallel_matches_one_device(model):
    jax_report = report("jax", model)
    assert jax_report["devices"] == 2
    assert jax_report["data_layout"] == ["batch", None]  # the batch is split
    result = jax_report[model]["data_parallel"]
    assert result["sharded"] == {}  # every variable replicated
    check_same_as_one_device(result)


@jax_only
@pytest.mark.parametrize("model", MODELS)
def test_jax_model_parallel_shards_embeddings_and_output_layer(model):
    result = report("jax", model)[model]["model_parallel"]
    sharded = {
        path.split("/", 1)[-1] if model == "translator" else path: shapes
        for path, shapes in result["sharded"].items()
    }
    if model == "translator":  # vocabulary 14, embedding 8, decoder output 8
        assert sharded == {
            "source_embedding/embeddings": [[14, 4], [14, 4]],
            "target_embedding/embeddings": [[14, 4], [14, 4]],
            "output_dense/kernel": [[8, 7], [8, 7]],
            "output_dense/bias": [[7], [7]],
        }
    else:  # vocabulary 20, embedding 8, 2 classes from 32 features
        assert sharded == {
            "token_embedding/embeddings": [[20, 4], [20, 4]],
            "output_dense/kernel": [[32, 1], [32, 1]],
            "output_dense/bias": [[1], [1]],
        }
    check_same_as_one_device(result)


@tensorflow_only
@pytest.mark.parametrize("model", MODELS)
def test_tensorflow_mirrored_strategy_matches_one_device(model):
    tensorflow_report = report("tensorflow", model)
    assert tensorflow_report["devices"] == 2
    check_same_as_one_device(tensorflow_report[model]["mirrored"])
