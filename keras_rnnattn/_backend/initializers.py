"""Whether running a variable's initializer is costly on this backend."""

import keras


def initializers_compile():
    """Whether each variable initializer compiles a program the first time it runs.

    On JAX, XLA compiles every random initializer (and the QR of an orthogonal
    one) for each shape: building a shipped preset's model spent 2-7 s of its
    loading there (0.1-0.4 s without), against milliseconds on TensorFlow and
    PyTorch, which run them eagerly. `load_preset` lets the variables wait for
    the weights file where this is True (`_keras_private.DeferredInitializers`).

    Returns:
        bool.

    Example:

    >>> isinstance(initializers_compile(), bool)
    True
    """
    return keras.backend.backend() == "jax"
