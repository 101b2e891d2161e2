"""How a task model is rebuilt from a `.keras` file: its initializers and its optimizer."""

import contextlib

from keras_rnnattn._keras_private import DeferredInitializers, loading_saved_model


def initializers_while_loading():
    """The context a task's `from_config` builds the model in.

    Inside `keras.saving.load_model`, which assigns every variable its saved
    value next (and refuses a file that misses one), `DeferredInitializers`:
    no initializer runs first (seconds on JAX, as in `from_preset`). Anywhere
    else a context that does nothing.
    """
    if loading_saved_model():
        return DeferredInitializers()
    return contextlib.nullcontext()


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
