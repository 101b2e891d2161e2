"""The three Keras backends, and the one a cross-backend test hands its files to."""

import keras
import pytest

BACKENDS = ("tensorflow", "jax", "torch")


def next_backend():
    """The backend after this run's in the ring tensorflow -> jax -> torch -> tensorflow.

    The suite runs once per backend. A test that saves under this run's backend
    and loads under `next_backend()` in a subprocess therefore saves under every
    backend once and loads under every backend once over the three runs: each
    backend's writer and reader is checked, with one subprocess per run instead
    of one per other backend.

    Returns:
        The name of a Keras backend other than `keras.backend.backend()`.
    """
    here = BACKENDS.index(keras.backend.backend())
    return BACKENDS[(here + 1) % len(BACKENDS)]


# A test whose subject is the same on every backend (how the package imports, how
# the README runner works) and that pays for fresh Python processes runs in one
# backend's suite only: the torch suite, the shortest, since `make test` runs the
# three suites side by side.
ONE_BACKEND = "torch"
on_one_backend = pytest.mark.skipif(
    keras.backend.backend() != ONE_BACKEND,
    reason=f"the same on every backend: runs in the {ONE_BACKEND} suite",
)


def only_on_one_backend():
    """`on_one_backend` as a call, for modules that must not import Keras early."""
    if keras.backend.backend() != ONE_BACKEND:
        pytest.skip(f"the same on every backend: runs in the {ONE_BACKEND} suite")
