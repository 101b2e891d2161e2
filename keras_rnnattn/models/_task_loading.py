"""How a task model is rebuilt from a `.keras` file: its initializers and its optimizer."""

import contextlib

from keras_rnnattn._keras_private import DeferredInitializers, loading_saved_model


def initializers_while_loading(config):
    """The context a task's `from_config` builds the model of `config` in.

    Inside `keras.saving.load_model`, which assigns every variable its saved
    value next (and refuses a file that misses one), `DeferredInitializers`:
    no initializer runs first (seconds on JAX, as in `from_preset`). Anywhere
    else, or where a model inside `config` (an ensemble's member) carries a
    compile state (its optimizer would make variables from values, which a
    deferred block refuses), a context that does nothing.
    """
    if loading_saved_model() and not _inner_compile_config(config):
        return DeferredInitializers()
    return contextlib.nullcontext()


def _inner_compile_config(value):
    """Whether a nested config holds a `compile_config` that is not None."""
    if isinstance(value, dict):
        if value.get("compile_config") is not None:
            return True
        return any(_inner_compile_config(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_inner_compile_config(v) for v in value)
    return False


def build_optimizer_as_saved(optimizer, variables):
    """Builds `optimizer` for `variables` only if the `.keras` file being loaded
    holds a built optimizer's state (a model saved after training).

    A model saved before it trained (a preset compiled with its defaults) holds
    the unbuilt optimizer's few variables: building it first made Keras skip
    loading them with a warning, and on JAX compiled an initializer for each
    new variable (seconds). Keras loads the optimizer's state just after
    `compile_from_config`, through its `load_own_variables`.
    """
    load = optimizer.load_own_variables

    def load_own_variables(store):
        if not optimizer.built and len(store.keys()) > len(optimizer.variables):
            optimizer.build(variables)
        load(store)

    optimizer.load_own_variables = load_own_variables
