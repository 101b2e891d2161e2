"""Test configuration shared by every backend's run."""

import os

from tests.compile_flags import TEST_XLA_FLAGS
from tests.missing_installs import ci_requires_installs, is_missing_install

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With `CI=true`, a skip for something not installed is a failure."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or not ci_requires_installs(os.environ):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
    if is_missing_install(str(reason)):
        report.outcome = "failed"
        report.longrepr = (
            f"CI=true: this test would skip because something it reads is not "
            f"installed ({reason}); .ci/run installs it with `make data`."
        )
