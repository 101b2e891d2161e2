"""Which skips mean that something the tests read is not installed.

A test skips where a corpus, a Python source, an optional package or the
browser is missing, and its reason names what installs it. With `CI=true`
(`.ci/run`, after `make data`) such a skip fails instead: CI installs all of
them, so a skip there would hide a test that never runs. A pytest plugin: the
suite's conftest takes its hook, and `-p tests.missing_installs` loads it
alone. It imports no Keras.
"""

import os

import pytest

# Words of a skip's reason that say what is missing and how to install it.
MISSING_MARKS = (
    "not installed",
    "apt-get install",
    "pip download",
    "pip install",
    "could not import",
    "chromium",
)


def is_missing_install(reason):
    """Whether a skip's `reason` says that something is not installed.

    Args:
        reason: str, the skip's reason.

    Returns:
        bool.

    Example:

    >>> is_missing_install("corpus not installed: apt-get install fortunes")
    True
    >>> is_missing_install("the same on every backend: runs in the torch suite")
    False
    """
    reason = reason.lower()
    return any(mark in reason for mark in MISSING_MARKS)


def ci_requires_installs(environ):
    """Whether missing installs fail (`CI` is `true` or `1`), not skip."""
    return environ.get("CI", "").strip().lower() in ("true", "1")


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
