"""The pip extras of keras-rnnattn and the one-line errors that name them.

Imports no Keras: the command line and the demo explain a missing backend
before Keras fails to import it. The extras are those of pyproject.toml.
"""

import importlib.util
import json
import os

BACKENDS = ("tensorflow", "jax", "torch")
# The package a Keras backend imports, by backend name.
_BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def pip_extra(extra):
    """The install command of an extra, run in the keras-rnnattn checkout (the
    package installs from its source): `pip install ".[jax]"`."""
    return f'pip install ".[{extra}]"'


def installed(module):
    """Whether `module` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def chosen_backend():
    """The backend Keras will import: KERAS_BACKEND, else ~/.keras/keras.json's,
    else TensorFlow (Keras's own order)."""
    backend = os.environ.get("KERAS_BACKEND")
    if backend:
        return backend
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as file:
            return json.load(file).get("backend") or "tensorflow"
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


def missing_backend_message():
    """The one-line explanation when Keras's chosen backend is not installed,
    else None.

    Example:

    >>> message = missing_backend_message()  # None where the backend is installed
    >>> message is None or message.startswith("Keras's backend")
    True
    """
    backend = chosen_backend()
    module = _BACKEND_MODULES.get(backend)
    if module is None or installed(module):
        return None
    how = (
        "KERAS_BACKEND is set to it"
        if os.environ.get("KERAS_BACKEND")
        else "KERAS_BACKEND is not set, and Keras then uses it"
    )
    others = [name for name in BACKENDS if installed(_BACKEND_MODULES[name])]
    if others:
        choice = " or ".join(f"KERAS_BACKEND={name}" for name in others)
        fix = f"set {choice} (installed), or {pip_extra(backend)}"
    else:
        fix = f"install one: {pip_extra(backend)} (or [jax], or [torch])"
    return f"Keras's backend {backend!r} is not installed ({how}): {fix}"


def require(module, extra, what):
    """Raises an ImportError naming the extra unless `module` is installed.

    Args:
        module: str, the package to import (`"tensorflow"`).
        extra: str, the extra that brings it (`"export"`).
        what: str, what needs it (`"TFLite export"`).

    Example:

    >>> require("json", "plot", "Reading JSON")
    >>> require("no_such_package", "plot", "Plotting")
    Traceback (most recent call last):
    ...
    ImportError: Plotting needs no_such_package, which is not installed: pip install ".[plot]"
    """
    if not installed(module):
        error = ImportError(
            f"{what} needs {module}, which is not installed: {pip_extra(extra)}"
        )
        error.name = module
        raise error
