"""Test configuration shared by every backend's run."""

import os

from tests.compile_flags import TEST_XLA_FLAGS

# With CI=true a skip for something not installed fails (the plugin's hook).
from tests.missing_installs import pytest_runtest_makereport  # noqa: F401

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if os.environ.get("KERAS_BACKEND") == "torch":
    # The suite's models are tiny: one intra-op thread is as fast, and PyTorch's
    # OpenMP workers spin badly (20x slower) when the cores are shared.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
if os.environ.get("KERAS_BACKEND") in ("jax", "tensorflow"):
    # XLA (all of JAX; TensorFlow's `jit_compile=True`) compiles the suite's
    # tiny programs without its expensive work (tests/compile_flags.py);
    # users' programs keep XLA's defaults.
    os.environ.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Each test starts with a float32 policy, fresh names and a fixed seed."""
    keras.config.set_dtype_policy("float32")
    keras.utils.clear_session(free_memory=False)
    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def pytest_report_header(config):
    return f"keras {keras.__version__}, backend {keras.backend.backend()}"
