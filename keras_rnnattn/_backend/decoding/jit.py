"""How the models run inference loops on each backend: compiled, without gradients."""

import contextlib
import functools

import keras

from keras_rnnattn._backend.decoding.loops import compiled_steps


def no_grad():
    """A context in which no gradient graph is recorded (torch); a no-op elsewhere.

    Eager torch otherwise records every op of a decoding loop for autograd and
    keeps its intermediate tensors alive until the outputs are freed.
    """
    if keras.backend.backend() == "torch":
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()


def compiled(model, fn):
    """`fn` compiled where the backend compiles a whole function; the one backend
    branch of the models' decoding.

    JAX: `jax.jit`, with the model's weights passed as arguments (so a compiled
    function never holds stale weights), compiled once per input shape.
    TensorFlow: `tf.function`, without AutoGraph. Torch runs `fn` under
    `torch.no_grad()`, eagerly but for the step of each decoding loop, which
    `torch.compile` compiles when the model was compiled with
    `jit_compile=True` (Keras's own meaning of it on torch; `"auto"` is eager
    there), read at each call.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        variables = list(model.variables)

        @jax.jit
        def run(values, *args, **kwargs):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(*args, **kwargs)

        return lambda *args, **kwargs: run(
            [v.value for v in variables], *args, **kwargs
        )
    if backend == "tensorflow":
        import tensorflow as tf

        # TensorFlow counts traces by the Python function's code object, which
        # the closures of every model share: several models (presets) in one
        # process added up to its "triggered tf.function retracing" warning.
        # A `partial` has no code object, so each compiled function counts its
        # own traces. Without AutoGraph the function is traced as written, as
        # `jax.jit` traces it (its loops and branches are `ops.while_loop` and
        # `ops.cond`), as Keras traces its own code and export endpoints:
        # AutoGraph's rewriting of every function of the package that a
        # decoding function calls took most of a first `translate` (the Ding
        # preset's first greedy call, one thread: 5.5 s with it, 1.1 without).
        return tf.function(
            functools.partial(fn), reduce_retracing=True, autograph=False
        )

    def run_without_gradients(*args, **kwargs):
        with no_grad(), compiled_steps(getattr(model, "jit_compile", False) is True):
            return fn(*args, **kwargs)

    return run_without_gradients


def cond_differentiable(jit_compile):
    """Whether a train step compiled with `jit_compile` can differentiate `ops.cond`.

    Not on TensorFlow with XLA: the gradient of a `tf.cond` whose branches keep
    different intermediates (one branch a `tf.scan`, say) holds `FakeParam`
    ops, which XLA cannot compile ("Resource _Retval node's input does not
    come from _Arg directly", TensorFlow 2.21). Callers then run the branch
    that is right for every value of the predicate. JAX differentiates
    `lax.cond` under `jit`; torch runs the taken branch eagerly.

    Args:
        jit_compile: bool, the model's `jit_compile`.

    Returns:
        bool.
    """
    return not (keras.backend.backend() == "tensorflow" and bool(jit_compile))


def own_trace_counts(function):
    """`function` (a step function Keras made) counting its traces on its own.

    TensorFlow warns about "triggered tf.function retracing" by counting the
    traces of every `tf.function` made from the same Python code: the
    `predict_function` of each model in a process is made from the same
    closure inside Keras, so a few models that each trace once or twice (a
    first batch and a smaller last one) add up to the warning, though none
    retraces. Wrapped in a `partial` (which has no code object), each model's
    function is counted alone. Elsewhere `function` comes back as it is.

    Args:
        function: what Keras's `make_predict_function` set, or None. (Its
            train and test functions are Python closures around the
            `tf.function`, out of reach here.)

    Returns:
        The function to use instead.
    """
    if keras.backend.backend() != "tensorflow" or function is None:
        return function
    import tensorflow as tf

    python_function = getattr(function, "python_function", None)
    if python_function is None or isinstance(python_function, functools.partial):
        return function  # run eagerly, or already wrapped
    return tf.function(functools.partial(python_function), reduce_retracing=True)
