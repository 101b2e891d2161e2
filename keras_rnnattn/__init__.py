"""keras_rnnattn: attention for recurrent networks in Keras 3.

Subpackages load on first use (`keras_rnnattn.models`, `.layers`, ...), so
`from keras_rnnattn.text import BpeTokenizer` works without importing Keras,
for example beside a TFLite interpreter. When Keras is already imported, the
Keras-based subpackages load at once, which registers every class for
`keras.saving.load_model`.
"""

import importlib
import sys

__version__ = "0.1.0"

_SUBMODULES = (
    "callbacks",
    "datasets",
    "decoding",
    "export",
    "layers",
    "metrics",
    "models",
    "ops",
    "plotting",
    "presets",
    "text",
)
_ATTRIBUTES = {
    "PresetError": "keras_rnnattn.preset_error",
    "PresetMixin": "keras_rnnattn.preset_mixin",
}

__all__ = ["PresetError", "PresetMixin", *_SUBMODULES, "__version__"]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"keras_rnnattn.{name}")
    if name in _ATTRIBUTES:
        return getattr(importlib.import_module(_ATTRIBUTES[name]), name)
    raise AttributeError(f"module 'keras_rnnattn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


if "keras" in sys.modules:
    # Register the layers and models for `keras.saving.load_model`.
    from keras_rnnattn import layers, models  # noqa: F401
