"""Which skips mean that something the tests read is not installed.

A test skips where a corpus, a Python source, an optional package or the
browser is missing, and its reason names what installs it. With `CI=true`
(`.ci/run`, after `make data`) such a skip fails instead: CI installs all of
them, so a skip there would hide a test that never runs. No imports: the
conftest reads it before Keras.
"""

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
