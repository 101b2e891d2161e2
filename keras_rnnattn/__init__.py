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

from keras_rnnattn._version import __version__

_SUBMODULES = (
    "callbacks",
    "datasets",
    "decoding",
    "export",
    "integrations",
    "layers",
    "metrics",
    "models",
    "ops",
    "plotting",
    "presets",
    "text",
    "training",
)
_ATTRIBUTES = {
    "PresetError": "keras_rnnattn.presets.error",
    "PresetMixin": "keras_rnnattn.presets.mixin",
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


def _check_backend():
    """Raises one clear ImportError, before Keras runs, where the backend Keras
    would import is not installed (Keras's own error is a long traceback)."""
    from keras_rnnattn._extras import missing_backend_message

    message = missing_backend_message()
    if message is not None:
        raise ImportError(message)


class _RegisterAfterKeras(importlib.abc.MetaPathFinder):
    """Registers the classes once Keras is imported, wherever that happens.

    Keras may be imported by the user (before or after this package) or by one
    of this package's own modules. Registering imports the layers and models,
    which must not happen while one of this package's modules is half run (it
    would import it again, half made): so this finder counts the package's
    modules being imported, and registers when Keras is in and that count is
    back to zero. Then it leaves `sys.meta_path`.
    """

    def __init__(self):
        self.importing = 0  # this package's modules being run right now
        self.keras_ready = False

    def find_spec(self, fullname, path=None, target=None):
        own = fullname.startswith(__name__ + ".")
        if fullname != "keras" and not own:
            return None
        if fullname == "keras":
            _check_backend()
        spec = None
        for finder in sys.meta_path:  # find it as the other finders would
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_count(module):
            self.importing += own
            try:
                exec_module(module)
            finally:
                self.importing -= own
            self.keras_ready = self.keras_ready or fullname == "keras"
            if self.keras_ready and not self.importing and self in sys.meta_path:
                sys.meta_path.remove(self)
                _register()

        try:
            spec.loader.exec_module = exec_and_count  # this module's loader only
        except AttributeError:  # a loader without instance attributes
            pass
        return spec


if "keras" in sys.modules:
    _register()
elif not any(isinstance(f, _RegisterAfterKeras) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterKeras())
