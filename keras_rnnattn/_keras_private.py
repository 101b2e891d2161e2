"""The private Keras names the package uses, found in one place or failing loudly.

Keras has no public API for two things the presets need:

- `keras.src.saving.saving_lib.save_weights_only(model, file, objects_to_skip=...)`
  writes a model's weights without its optimizer's (`Model.save_weights` writes
  both);
- `keras.src.saving.serialization_lib.SafeModeScope(True)` keeps safe mode on
  while a preset is read, even after a global
  `keras.config.enable_unsafe_deserialization()` (which overrides the
  `safe_mode=True` argument of `keras.saving.deserialize_keras_object`).

Both are in Keras 3.10 (the oldest Keras `pyproject.toml` allows) to 3.16; the
test suite runs on 3.15. Where a Keras release moves or changes one, using it
raises an ImportError that names it and that range, rather than doing something
else; `tests/test_keras_private.py` imports exactly these names, so that the
suite fails first.
"""

import importlib
import inspect

KERAS_VERSIONS = "3.10 to 3.16"


def private_name(module, name, keywords=()):
    """`module.name` from Keras's private `keras.src`, or a clear ImportError.

    Args:
        module: the dotted module, e.g. `"keras.src.saving.saving_lib"`.
        name: the attribute.
        keywords: argument names the callable must accept.

    Returns:
        The attribute.

    Example:

    >>> private_name("keras.src.saving.serialization_lib", "SafeModeScope").__name__
    'SafeModeScope'
    """
    import keras

    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        found = None
    missing = [k for k in keywords if found is not None and not _accepts(found, k)]
    if found is None or missing:
        what = f"{module}.{name}" + (f"({missing[0]}=...)" if missing else "")
        raise ImportError(
            f"keras_rnnattn uses the private Keras name {what}, which Keras "
            f"{keras.__version__} does not have. It is in Keras {KERAS_VERSIONS}: "
            f"install one of those (pip install 'keras>=3.10,<3.17') or a "
            "keras_rnnattn release that supports this Keras."
        )
    return found


def _accepts(fn, keyword):
    try:
        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read: trust the name
        return True


def save_weights_only(model, file, objects_to_skip):
    """Writes `model`'s weights to `file` (`.weights.h5`), leaving out `objects_to_skip`."""
    save = private_name(
        "keras.src.saving.saving_lib", "save_weights_only", ("objects_to_skip",)
    )
    save(model, file, objects_to_skip=objects_to_skip)


def safe_mode_scope():
    """A context in which Keras deserialises in safe mode, whatever the global setting."""
    return private_name("keras.src.saving.serialization_lib", "SafeModeScope")(True)
