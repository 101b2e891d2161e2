"""The private Keras names the package uses, found in one place or failing loudly.

Keras has no public API for three things the presets need:

- `keras.src.saving.saving_lib.save_weights_only(model, file, objects_to_skip=...)`
  writes a model's weights without its optimizer's (`Model.save_weights` writes
  both);
- `keras.src.saving.serialization_lib.SafeModeScope(True)` keeps safe mode on
  while a preset is read, even after a global
  `keras.config.enable_unsafe_deserialization()` (which overrides the
  `safe_mode=True` argument of `keras.saving.deserialize_keras_object`).

- `keras.src.backend.common.global_state` (its `"uninitialized_variables"`
  list) and a variable's `_value` and `_deferred_initialize()`, with which
  `deferred_initializers` lets a preset's variables wait for the weights file
  instead of running their random initializers first (on JAX, XLA compiles
  each initializer for each shape: seconds per model);
- `keras.src.saving.serialization_lib.ObjectSharingScope`'s global attribute
  `"shared_objects/id_to_obj_map"`, set only while `keras.saving.load_model`
  builds a model whose weights it loads next: `loading_saved_model` reads it,
  so that a `.keras` file's model defers its initializers too.
- `keras.callbacks.SwapEMAWeights`'s `_ema_weights_in_model`, whether the
  model holds the averaged weights between two epochs: a resumed training run
  (`keras_rnnattn.training.TrainingRun`) restores it with the variables.

All are in Keras 3.10 (the oldest Keras `pyproject.toml` allows) to 3.16; the
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


def loading_saved_model():
    """Whether `keras.saving.load_model` is building a model right now.

    Keras builds the model of a `.keras` file (or folder, or checkpoint) inside
    its `ObjectSharingScope`, then gives every variable its saved value (and
    refuses a file that misses one), so initial values are never read.

    Returns:
        bool.

    Example:

    >>> loading_saved_model()
    False
    """
    state = private_name("keras.src.backend.common", "global_state")
    scope = private_name("keras.src.saving.serialization_lib", "ObjectSharingScope")
    del scope  # imported only to fail loudly where Keras moved it
    return state.get_global_attribute("shared_objects/id_to_obj_map") is not None


class DeferredInitializers:
    """Builds a model without running its initializers, for weights loaded next.

    Variables created inside the `with` block (Keras's `StatelessScope` with
    `initialize_variables=False`) get no value; `initialize_unassigned()`,
    called once the weights are loaded, runs the initializer of each one that
    loading left without a value (a head that the weights file does not
    cover), so the model ends as if built and loaded the usual way. The
    values are the same: initial values are overwritten by the loaded ones.

    This pays on JAX only, where XLA compiles each random initializer for each
    shape (2-7 s for a shipped preset against 0.1-0.4 s); elsewhere, inside
    another stateless scope, under a `keras.distribution` (whose layouts are
    set when a variable is initialised) or with Flax NNX variables, the block
    changes nothing. A failure inside the block forgets its variables.

    Example:

    >>> import keras, numpy as np
    >>> deferred = DeferredInitializers()
    >>> with deferred:
    ...     model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> _ = model.layers[0].kernel.assign(np.ones((3, 2), "float32"))
    >>> deferred.initialize_unassigned()  # the bias: its initializer runs now
    >>> model.predict(np.ones((1, 3), "float32"), verbose=0).tolist()
    [[3.0, 3.0]]
    """

    def __init__(self):
        import keras

        from keras_rnnattn._backend import initializers_compile

        self.active = (
            initializers_compile()
            and keras.distribution.distribution() is None
            and not getattr(keras.config, "is_nnx_enabled", lambda: False)()
        )
        self.created = []
        self._scope = None

    def _pending(self, state):
        return state.get_global_attribute(
            "uninitialized_variables", [], set_to_default=True
        )

    def __enter__(self):
        import keras

        state = private_name("keras.src.backend.common", "global_state")
        self.active = (
            self.active and state.get_global_attribute("stateless_scope") is None
        )
        if not self.active:
            return self
        self._before = list(self._pending(state))
        self._scope = keras.StatelessScope(initialize_variables=False)
        self._scope.__enter__()
        return self

    def __exit__(self, error_type, error, traceback):
        if self._scope is None:
            return False
        self._scope.__exit__(error_type, error, traceback)
        self._scope = None
        state = private_name("keras.src.backend.common", "global_state")
        known = {id(v) for v in self._before}
        created = [v for v in self._pending(state) if id(v) not in known]
        state.set_global_attribute("uninitialized_variables", self._before)
        self.created = created if error_type is None else []
        return False

    def initialize_unassigned(self):
        """Runs the initializer of each variable of the block still without a value."""
        for variable in self.created:
            if variable._value is None:
                variable._deferred_initialize()
        self.created = []


EMA_FLAG = "_ema_weights_in_model"


def ema_weights_in_model(swap):
    """Whether a `keras.callbacks.SwapEMAWeights` has the averaged weights in the model.

    Example:

    >>> import keras
    >>> ema_weights_in_model(keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    False
    """
    _check_swap(swap)
    return bool(getattr(swap, EMA_FLAG))


def set_ema_weights_in_model(swap, value):
    """Tells a `SwapEMAWeights` which weights the model holds (after a restore)."""
    _check_swap(swap)
    setattr(swap, EMA_FLAG, bool(value))


def _check_swap(swap):
    import keras

    if not hasattr(swap, EMA_FLAG):
        raise ImportError(
            f"keras_rnnattn uses the private attribute SwapEMAWeights.{EMA_FLAG}, "
            f"which Keras {keras.__version__} does not have. It is in Keras "
            f"{KERAS_VERSIONS}: install one of those (pip install "
            "'keras>=3.10,<3.17') or a keras_rnnattn release that supports this Keras."
        )
