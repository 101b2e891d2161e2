"""The three Keras backends, and the one a cross-backend test hands its files to."""

import keras

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
