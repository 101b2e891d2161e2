"""How a decoding loop runs on each backend: one compiled while loop, or a Python
loop that reads nothing back from the device inside (its step compiled by
`torch.compile` when asked)."""

import contextlib
import functools
import gc
import types
import warnings
import weakref

import keras
from keras import ops

import keras_rnnattn._backend._torch_private as _torch_private
import keras_rnnattn._backend.decoding.whole_loop as whole_loop
import keras_rnnattn._backend.experimental.captured_loop as captured_loop
from keras_rnnattn._backend.options import current_torch_options

# Torch on an accelerator: the steps between two reads of the stop condition.
# On the CPU each step has finished when it returns, so the condition is read
# before every step (no step runs after the last row has ended).
STOP_CHECK_EVERY = 8
# Torch: what each loop's step function is wrapped in, and the context of its
# steps after the second (`step_wrapper`).
_STEP_WRAPPERS = []
# The layer `step_wrapper` calls (`_call_a_layer`), made once.
_LAYER = []
# Torch: the steps a compiled loop runs with all of Dynamo's guards checked.
GUARDED_STEPS = 2
# Torch: the compiled versions Dynamo keeps of one step function (its code is
# shared by every model and search setting; each needs one or two) before it
# falls back to running the step eagerly. Dynamo's own default is 8.
STEP_RECOMPILE_LIMIT = 64


@contextlib.contextmanager
def step_wrapper(wrap, steady=None, loop_compiler=None, block_runner=None):
    """Within the block, torch decoding loops run `wrap(body)` as their step,
    and `compiled_stage(fn)` is `wrap(fn)`.

    For compiling or capturing the step: `torch.compile(body,
    fullgraph=True)` succeeds only for a step without a graph break, which
    a read back to the host would cause (`tests/decoding/test_torch_steps.py`).

    Args:
        wrap: `wrap(body) -> body`.
        steady: optional `steady() -> context manager`, entered for a loop's
            steps after the first `GUARDED_STEPS`: their inputs are outputs
            of the same step, alike in every property a guard reads.
        loop_compiler: optional; where given, a loop on the CPU runs its
            steps as one call of a `while_loop` that
            `loop_compiler(graph_module, example_inputs)` compiles
            (`whole_loop.run_loop`; `wrap` compiles the step where Dynamo
            cannot trace it as one graph).
        block_runner: optional; where given, a loop on an accelerator runs
            its steps after the first block through
            `block_runner(step, leaves, go_on, first, max_steps, every, key)`
            (`captured_loop.run_blocks`: a block of steps a replay of a
            captured CUDA graph), then the steps it leaves one by one.
    """
    _call_a_layer()
    _STEP_WRAPPERS.append((wrap, steady, loop_compiler, block_runner))
    try:
        yield
    finally:
        _STEP_WRAPPERS.pop()


def _call_a_layer():
    """Calls a Keras layer once in this thread, before a step is first traced.

    Keras creates thread-local slots of its global state (the call context,
    the name-scope stack) at a thread's first layer call. A function that
    Dynamo traced before that call is guarded on their absence, so its
    second call compiled it again (1.9 s for the encoder of
    `benchmarks/decode.py`'s model on one CPU thread).
    """
    if not _LAYER:
        _LAYER.append(keras.layers.Identity())
    _LAYER[0](ops.zeros((1,)))


@contextlib.contextmanager
def compiled_steps(enabled=True):
    """Within the block, torch decoding loops run their step through `torch.compile`.

    On the CPU a loop's steps run as one inductor-compiled
    `while_loop` over the step's graph (`whole_loop.run_loop`, unless
    `torch_options(whole_loop=False)`); on an accelerator each step is a
    compiled call, and with `torch_options(cuda_graphs=True)` the blocks of steps between two reads
    of the stop condition after the first are replays of one CUDA graph
    (`captured_loop.run_blocks`).
    The step is compiled once per model, search setting and kind of input
    (Dynamo caches it on the step's code, guarded by the model and the
    shapes; each new batch size or source length compiles again) and reused
    by every later call: what compiling saves
    is torch's per-op dispatch, and on a GPU one kernel launch per fused
    group of ops. The first call pays the compilation (seconds on a CPU).
    The tokens are those of the eager step up to float rounding in fused
    kernels. A no-op on JAX and TensorFlow, which compile the whole loop,
    and where `enabled` is False.

    Args:
        enabled: bool, whether to compile (models pass their `jit_compile`).

    Example:

    >>> from keras import ops
    >>> def cond(i, total):
    ...     return i < 3
    >>> def body(i, total):
    ...     return i + 1, total + i
    >>> with compiled_steps(False):
    ...     i, total = decoding_loop(cond, body, (ops.array(0), ops.array(0)), 3)
    >>> int(total)
    3
    """
    if not enabled or keras.backend.backend() != "torch":
        yield
        return

    options = current_torch_options()
    dynamo = _torch_private.dynamo_config()
    with dynamo.patch(recompile_limit=STEP_RECOMPILE_LIMIT):
        wrapper = step_wrapper(
            _compiled_caller,
            _differentiating_guards_only,
            whole_loop.compile_loop if options.whole_loop else None,
            captured_loop.run_blocks if options.cuda_graphs else None,
        )
        with (
            _collect_after_compiling(),
            _fast_cpu_kernels(),
            wrapper,
            warnings.catch_warnings(),
        ):
            # Keras's dtype rules are `lru_cache`d functions of dtypes, which
            # Dynamo traces through (the same results): a warning per process.
            warnings.filterwarnings(
                "ignore", message="Dynamo detected a call to a `functools.lru_cache`"
            )
            yield


# `_compiled_caller`'s compiled callers, one per code of a step or stage.
_CALLERS = {}
# The codes of the methods each owner has run once eagerly (`_first_eagerly`).
_RAN = weakref.WeakKeyDictionary()


def _call(fn, *args):
    return fn(*args)


def _call_method(function, owner, *args):
    return function(owner, *args)


def _compiled_caller(fn, backend="inductor"):
    """`fn` through `torch.compile`, wrapped once per process for each code of `fn`.

    `torch.compile(fn)` itself took 1.3 ms (it copies inductor's whole
    configuration), and a decoding loop's step and the encoder are new
    closures or bound methods at every call: two wraps a translation. Here
    `fn` is an argument of a compiled caller made once for its code, a copy
    of `_call` with a code object of its own, so that Dynamo keeps each
    step's compiled versions apart as before. Dynamo guards a function
    argument by its code (a closure) or its identity, and what the step
    reads of its closure as it did before.

    Args:
        fn: a function or a bound method.
        backend: `torch.compile`'s backend.

    Returns:
        A function of `fn`'s arguments.
    """
    import torch

    method = getattr(fn, "__func__", None)
    function = method if method is not None else fn
    code = getattr(function, "__code__", None)
    if code is None:
        return torch.compile(fn, backend=backend, dynamic=None)
    key = (code, method is not None, backend)
    caller = _CALLERS.get(key)
    if caller is None:
        template = _call_method if method is not None else _call
        own = template.__code__.replace(co_name=f"compiled_{code.co_name}")
        # `dynamic=None`: static shapes first; a second batch size or source
        # length recompiles once with that axis dynamic.
        caller = torch.compile(
            types.FunctionType(own, template.__globals__, own.co_name),
            backend=backend,
            dynamic=None,
        )
        _CALLERS[key] = caller
    if method is not None:
        compiled = functools.partial(caller, method, fn.__self__)
        ran = _RAN.setdefault(fn.__self__, set())
        if code not in ran:
            return functools.partial(_first_eagerly, compiled, fn, ran, code)
        return compiled
    return functools.partial(caller, fn)


def _first_eagerly(compiled, fn, ran, code, *args):
    """`compiled(*args)`, after running `fn(*args)` eagerly once for its owner.

    Keras sets a layer's `_parent_path` at the layer's first call. A method
    that Dynamo traced before some of its layers were ever called (a model
    just loaded, whose dropout layers have not run) is guarded on that
    attribute being unset, so its second call compiled it again (3.6 s for
    the Ding preset's encoder on one CPU thread). Run eagerly first, the
    method sets what Keras sets, and the compiled result is the one every
    later call gets.
    """
    if code not in ran:
        fn(*args)
        ran.add(code)
    return compiled(*args)


@contextlib.contextmanager
def _collect_after_compiling():
    """Collects Python's garbage once after a block in which Dynamo compiled.

    Compiling a step leaves about 800,000 Python objects (Dynamo's and
    inductor's), most of them long-lived. Python's full collection, which
    walks them all, ran on its own schedule in the second or third decoding
    call after the compiling one: 0.4-0.5 s in a call of 0.07 s
    (`benchmarks/decode.py`'s model, greedy, one CPU thread). Run at the end
    of the compiling call (seconds long), it leaves no full collection due
    in the calls after it.
    """
    counters = _torch_private.dynamo_counters()

    graphs = counters["stats"]["unique_graphs"]
    try:
        yield
    finally:
        if counters["stats"]["unique_graphs"] != graphs:
            gc.collect()


def _fast_cpu_kernels():
    """Inductor's CPU kernels, for the decoding loops: tanh as
    2 / (1 + exp(-2x)) - 1, and a product and a sum as one multiply-add.

    The default (Sleef's) tanh took three times as long in a compiled
    decoding step (the attention's energies, the GRU's candidate state),
    within 1e-7 of it. Inductor compiles its kernels with
    `-ffp-contract=off` (each product rounded, as eager torch computes it);
    XLA's CPU kernels contract. Contracted, the additive attention's fused
    energies, softmax and context at `benchmarks/decode.py`'s beam-4 shape
    (`(256, 15, 256)`: `rational_tanh`'s polynomials, the weighted sums) took
    0.71 ms against 0.99 ms, one CPU thread (XLA: 0.74 ms). The torch
    versions without a setting keep their default.
    """
    inductor = _torch_private.inductor_config()
    settings = {}
    if hasattr(inductor.cpp, "use_decompose_tanh"):
        settings["cpp.use_decompose_tanh"] = True
    if hasattr(inductor.cpp, "enable_floating_point_contract_flag"):
        settings["cpp.enable_floating_point_contract_flag"] = "fast"
    return inductor.patch(settings)


def _differentiating_guards_only():
    """Torch: Dynamo checks only the guards that tell its compiled versions of a
    step apart (`skip_guard_eval_unsafe`), for the steps of a loop after the
    first `GUARDED_STEPS`.

    Those steps take what the step before returned: the same model, shapes,
    dtypes and strides as the step before, which passed every guard, so no
    guard could fail (inductor's code still asserts each input's size and
    stride). Checking them all took about 0.4 ms of a 5 ms step on the CPU.
    Under another stance than Dynamo's default (`force_eager`, say) nothing
    changes.
    """
    import torch

    stance = _torch_private.dynamo_stance()
    if getattr(stance, "stance", None) != "default" or stance.backend is not None:
        return contextlib.nullcontext()
    return torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)


def compiled_stage(fn):
    """`fn`, compiled as the decoding loops' steps are (`compiled_steps`).

    For the work before a torch decoding loop, such as encoding the source:
    compiled, its ops around PyTorch's fused RNN kernel run as a few fused
    kernels instead of one dispatch each (the shipped Ding preset's encoder
    took 11.3 ms against 15.5 ms eagerly, per member, on one CPU thread).
    Compiled once per model and kind of input, as a step is. `fn` itself
    outside `compiled_steps`, and on JAX and TensorFlow, which compile the
    whole search.

    Args:
        fn: a function of tensors.

    Returns:
        A function of the same arguments.
    """
    if not _STEP_WRAPPERS:
        return fn
    return _STEP_WRAPPERS[-1][0](fn)


def stop_check_interval(loop_vars):
    """The steps between two reads of a torch loop's stop condition.

    1 where the loop's tensors are on the CPU: a CPU step has run when it
    returns, so reading the condition waits for nothing, and the loop stops
    at the step `while_loop` would. `STOP_CHECK_EVERY` on an accelerator,
    where each read waits for the queued steps to finish.
    """
    return _interval_of(keras.tree.flatten(loop_vars))


def _interval_of(leaves):
    """`stop_check_interval` of the loop's tensors, a flat sequence."""
    for leaf in leaves:
        device = getattr(leaf, "device", None)
        if device is not None:
            return 1 if getattr(device, "type", "cpu") == "cpu" else STOP_CHECK_EVERY
    return 1


def decoding_loop(cond, body, loop_vars, max_steps, check_every=None):
    """`keras.ops.while_loop(cond, body, loop_vars)` for a loop of at most
    `max_steps` steps whose extra steps change nothing.

    JAX and TensorFlow run the loop as one `while_loop` (compiled with the
    function around it). Keras's torch `while_loop` is a Python loop that
    reads `cond` back to the host before every step, so on a GPU each step
    waits for the one before it to finish. Here torch runs `body` up to
    `max_steps` times and reads `cond` only every `check_every` steps: the
    steps in between are queued without waiting. Where a step wrapper is set
    (`compiled_steps`), the wrapped step also computes `cond` of its outputs,
    so that no eager op runs between two compiled steps. The decoders' bodies keep a
    finished row as it is (a finished mask, fixed-size buffers), so a step
    after `cond` turned False changes no result: the outputs are those of
    `while_loop`.

    Args:
        cond: `cond(*loop_vars) -> scalar bool tensor`, whether to go on.
        body: `body(*loop_vars) -> loop_vars`, one step; a step taken after
            `cond` became False must leave every result as it is.
        loop_vars: tuple of the loop's values.
        max_steps: Python int, the most steps (`cond` is False after them).
        check_every: Python int >= 1, the steps between two reads of `cond`
            on torch; 1 reads it before every step, as `while_loop` does.
            None: `stop_check_interval(loop_vars)` (every step on the CPU,
            every `STOP_CHECK_EVERY` steps on an accelerator).

    Returns:
        The tuple of the loop's values after the last step.

    Example:

    >>> from keras import ops
    >>> def cond(i, total):
    ...     return ops.logical_and(i < 5, total < 100)
    >>> def body(i, total):  # adds i while i < 5; after that changes nothing
    ...     go = i < 5
    ...     return ops.where(go, i + 1, i), ops.where(go, total + i, total)
    >>> i, total = decoding_loop(cond, body, (ops.array(0), ops.array(0)), 5)
    >>> int(total)
    10
    """
    loop_vars = tuple(loop_vars)
    if keras.backend.backend() != "torch":
        return tuple(ops.while_loop(cond, body, loop_vars))
    if not _STEP_WRAPPERS:
        if check_every is None:
            check_every = stop_check_interval(loop_vars)
        for step in range(max_steps):
            if step % check_every == 0 and not bool(cond(*loop_vars)):
                break
            loop_vars = tuple(body(*loop_vars))
        return loop_vars
    wrap, steady, loop_compiler, block_runner = _STEP_WRAPPERS[-1]
    import torch.utils._pytree as pytree

    # The wrapped step takes and returns the loop's tensors as one flat tuple:
    # Dynamo then guards, and rebuilds after each step, no nested structure
    # (0.1 ms less a compiled greedy step of `benchmarks/decode.py`). Torch's
    # own tree functions: a tenth of `keras.tree`'s time (0.3 ms a beam search).
    leaves, spec = pytree.tree_flatten(loop_vars)

    def step_and_cond(*leaves):
        # The condition of the next step computed in the wrapped step: no
        # eager call of `cond`'s few small ops between two steps.
        loop_vars = tuple(body(*pytree.tree_unflatten(leaves, spec)))
        return tuple(pytree.tree_flatten(loop_vars)[0]), cond(*loop_vars)

    if check_every is None:
        check_every = _interval_of(leaves)
    compiled_step = wrap(step_and_cond)
    go_on = cond(*loop_vars)
    leaves = tuple(leaves)
    first = 0
    if loop_compiler is not None and check_every == 1:
        # On the CPU: the steps in one compiled call.
        key = getattr(body, "__code__", body)
        leaves, go_on, first = whole_loop.run_loop(
            step_and_cond, leaves, go_on, max_steps, key, loop_compiler
        )
    if check_every == 1:
        block_runner = None
    step = first
    with contextlib.ExitStack() as stack:
        while step < max_steps:
            if step == GUARDED_STEPS and steady is not None:
                stack.enter_context(steady())
            if step % check_every == 0:
                if not bool(go_on):
                    break
                if block_runner is not None and step == check_every:
                    # On an accelerator, once the first block compiled the
                    # step: the next blocks replayed from one capture.
                    key = (getattr(body, "__code__", body), _shapes(leaves))
                    leaves, go_on, step = block_runner(
                        compiled_step, leaves, go_on, step, max_steps, check_every, key
                    )
                    block_runner = None
                    continue
            leaves, go_on = compiled_step(*leaves)
            step += 1
    return tuple(pytree.tree_unflatten(list(leaves), spec))


def _shapes(leaves):
    """The shapes and dtypes of a loop's tensors, part of its capture's key."""
    return tuple(
        (tuple(getattr(leaf, "shape", ())), getattr(leaf, "dtype", type(leaf)))
        for leaf in leaves
    )
