"""keras_rnnattn: attention for recurrent networks in Keras 3.

Subpackages load on first use (`keras_rnnattn.models`, `.layers`, ...), so
`from keras_rnnattn.text import BpeTokenizer` works without importing Keras,
for example beside a TFLite interpreter. The Keras-based subpackages load as
soon as Keras is imported, before or after this package, which registers every
class for `keras.saving.load_model`.
"""

import importlib
import importlib.abc
import importlib.util
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


def _register():
    """Imports the layers and models, which registers them with Keras."""
    importlib.import_module("keras_rnnattn.layers")
    importlib.import_module("keras_rnnattn.models")


class _RegisterAfterKeras(importlib.abc.MetaPathFinder):
    """Registers the classes right after `import keras`, wherever that happens.

    It finds Keras as the other finders would and runs `_register` once
    Keras's own module has run; then it leaves `sys.meta_path`.
    """

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec("keras")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module):
            del loader.exec_module  # the loader's own method again
            exec_module(module)
            _register()

        try:
            loader.exec_module = exec_and_register
        except AttributeError:  # a loader without instance attributes
            pass
        return spec


if "keras" in sys.modules:
    _register()
elif not any(isinstance(f, _RegisterAfterKeras) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterKeras())
