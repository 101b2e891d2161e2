"""Torch on the CPU: a compiled decoding loop's steps as one call, a
`while_loop` over the step's graph that inductor's C++ wrapper runs."""

import functools
import operator
import types

import keras_rnnattn._backend._torch_private as _torch_private

# The callers of `run_loop`, one per code of a loop's body, count of tensors
# and compiler.
_CALLERS = {}
# The keys of `_CALLERS` whose step Dynamo would not trace as one graph: their
# loops run step by step.
_REFUSED = set()
# The step being traced: whether it returns each input as it came.
_PASSED = []


def run_loop(step, leaves, go_on, max_steps, key, compiler):
    """Runs a loop's steps in one compiled call.

    Each call of a compiled step costs torch about 0.4 ms on the CPU besides
    its arithmetic (Dynamo's frame and cache lookup, the AOT wrapper,
    inductor's Python wrapper), where XLA runs one `while`. Here Dynamo traces
    one step, with all its guards, and hands the graph to a backend that
    compiles a `while_loop` over it (`compile_loop`: the loop runs in
    inductor's C++ wrapper, which reads the condition there). The tensors a
    step returns as it received them stay out of the carried ones, as
    `while_loop` wants; Dynamo's graph does not output them, so the step
    notes which they are while it is traced (`_note_passed`). Where the graph
    is not one a loop can carry (a count of outputs that differs, as when a
    step returns in one place a tensor it received in another), the backend
    compiles the step alone and this loop goes on step by step; where Dynamo
    cannot trace the step as one graph, every later loop of that `key`
    leaves the steps to the caller. Shapes are static: each new shape
    compiles its own loop.

    Args:
        step: `step(*leaves) -> (leaves, go_on)`, one step and the condition
            of the next, of a tuple of tensors.
        leaves: tuple of tensors, the loop's values before the first step.
        go_on: scalar bool tensor, whether the first step is to run.
        max_steps: Python int, the most steps (the condition is False after
            them).
        key: hashable, what tells loops' steps apart (their body's code).
        compiler: `compiler(graph_module, example_inputs) -> callable`, what
            compiles the loop's graph (`compile_loop`) or, where it does not
            fit, the step's.

    Returns:
        `(leaves, go_on, step)`: the values after the steps run here, the
        condition of the next step, and the index of the step the caller's
        step-by-step loop goes on from while `go_on` (0 where the trace was
        refused; `go_on` is False where the `while_loop` ran).
    """
    comptime = _torch_private.comptime()

    if not bool(go_on):
        return leaves, go_on, 0
    key = (key, len(leaves), compiler)
    if key in _REFUSED:
        return leaves, go_on, 0
    caller = _caller(key, compiler)

    def one_step(*values):
        out, go = step(*values)
        # Known when traced; `comptime` reads it by name then.
        passed = tuple(a is b for a, b in zip(out, values))  # noqa: F841
        comptime(lambda ctx: _note_passed(ctx.get_local("passed")))
        return tuple(out) + (go,)

    try:
        *values, go_on = caller(one_step, *leaves)
    except _torch_private.dynamo_exception():
        # Not one graph (a read back to the host, say): step by step, where
        # any error of the step's own is raised again.
        _REFUSED.add(key)
        return leaves, go_on, 0
    # A step compiled alone (the backend's fallback) returns after one step.
    steps = 1
    while steps < max_steps and bool(go_on):
        *values, go_on = caller(one_step, *values)
        steps += 1
    return tuple(values), go_on, steps


def _note_passed(passed):
    """At trace time: which of the traced step's inputs it returns as they
    came (a `ComptimeVar` of a tuple of bools), for `_loop_backend`."""
    _PASSED[:] = [passed.as_python_constant()]


def compile_loop(gm, example_inputs):
    """Inductor, with the loop in C++ (`cpp_wrapper`: its Python wrapper would
    run the body as a Python function each step) and the loop's graph in
    inductor's cache, whose key holds the body's and condition's graphs (it
    takes no `while_loop` unless told)."""
    import torch

    inductor = _torch_private.inductor_config()
    compile_fx = _torch_private.compile_fx()

    cacheable = {"torch.ops.higher_order.while_loop": torch.__version__}
    with inductor.patch(
        {"cpp_wrapper": True, "unsafe_marked_cacheable_functions": cacheable}
    ):
        return compile_fx(gm, example_inputs)


def _call(fn, *args):
    return fn(*args)


def _caller(key, compiler):
    """`torch.compile` of a copy of `_call` with a code object of its own, so
    that each key's compiled versions stay apart (Dynamo caches by code)."""
    caller = _CALLERS.get(key)
    if caller is None:
        import torch

        code = _call.__code__.replace(co_name="compiled_loop")
        caller = torch.compile(
            types.FunctionType(code, _call.__globals__, code.co_name),
            backend=functools.partial(_loop_backend, compiler=compiler),
            fullgraph=True,
            dynamic=False,
        )
        _CALLERS[key] = caller
    return caller


def _loop_backend(gm, example_inputs, compiler):
    """A `torch.compile` backend: the graph of one step of `run_loop`'s
    `one_step`, compiled as a `while_loop` that runs it until its condition
    is False; the step alone where its graph does not fit."""
    passed = _PASSED.pop() if _PASSED else None
    loop = None if passed is None else _while_graph(gm, passed)
    if loop is not None:
        try:
            return compiler(loop, example_inputs)
        except Exception:  # whatever inductor or `while_loop` refuses
            pass
    return compiler(gm, example_inputs)


def _while_graph(gm, passed):
    """The graph of `while_loop(cond, step, carried + (go,), others)` for the
    graph of one step, or None.

    The step's inputs are the loop's tensors, `one_step`'s arguments
    (Dynamo's source `L['args'][i]`), and the tensors it reads besides
    (weights), which the loop passes to every step. Its outputs are the
    tensors it does not return as they came (`passed`), in their order,
    then the condition; those are the carried ones, and the tensors passed
    through are passed to every step.
    """
    import torch
    import torch.fx as fx

    while_loop_op = _torch_private.while_loop_op()

    inputs = [node for node in gm.graph.nodes if node.op == "placeholder"]
    (outputs,) = [node for node in gm.graph.nodes if node.op == "output"]
    outputs = outputs.args[0]
    position = {}
    for j, node in enumerate(inputs):
        source = getattr(node.meta.get("grapharg"), "source", None)
        name = getattr(source, "name", "")
        if name.startswith("L['args'][") and name.count("[") == 2:
            position[int(name[len("L['args'][") : -1])] = j
    slots = [i for i, same in enumerate(passed) if not same]
    count = len(slots)
    if count < 1 or len(outputs) != count + 1:
        return None
    if any(i not in position for i in slots):
        return None
    carried = [position[i] for i in slots]
    for i, j in enumerate(carried):
        meta = (getattr(outputs[i], "meta", None) or {}).get("example_value")
        value = inputs[j].meta.get("example_value")
        if not _alike(meta, value):
            return None
    others = [j for j in range(len(inputs)) if j not in carried]

    # The body: (carried..., go, others...) -> (carried..., go).
    body, env = fx.Graph(), {}
    order = carried + [None] + others
    for j in order:
        if j is None:
            body.placeholder("go_on")
            continue
        env[inputs[j]] = body.placeholder(inputs[j].name)
        env[inputs[j]].meta = dict(inputs[j].meta)
    for node in gm.graph.nodes:
        if node.op not in ("placeholder", "output"):
            env[node] = body.node_copy(node, lambda arg: env[arg])
    body.output(tuple(env[node] for node in outputs))

    cond = fx.Graph()
    args = [cond.placeholder(f"arg{k}") for k in range(len(order))]
    cond.output(cond.call_function(torch.ops.aten.clone.default, (args[count],)))

    root = torch.nn.Module()
    root.cond_graph = fx.GraphModule(torch.nn.Module(), cond)
    root.body_graph = fx.GraphModule(gm, body)
    graph = fx.Graph()
    placeholders = []
    for node in inputs:
        placeholders.append(graph.placeholder(node.name))
        placeholders[-1].meta = dict(node.meta)
    go = graph.call_function(torch.ones, ((),), {"dtype": torch.bool})
    result = graph.call_function(
        while_loop_op,
        (
            graph.get_attr("cond_graph"),
            graph.get_attr("body_graph"),
            tuple(placeholders[j] for j in carried) + (go,),
            tuple(placeholders[j] for j in others),
        ),
    )
    graph.output(
        tuple(
            graph.call_function(operator.getitem, (result, k)) for k in range(count + 1)
        )
    )
    return fx.GraphModule(root, graph)


def _alike(a, b):
    """Whether two example tensors have one shape and dtype (a carried tensor
    and the step's output in its place); sizes compared as written, so that a
    symbolic size adds no guard."""
    if a is None or b is None:
        return False
    return [str(n) for n in a.shape] == [str(n) for n in b.shape] and a.dtype == b.dtype
