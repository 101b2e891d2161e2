"""Torch on the CPU: a compiled decoding loop's steps after the first as one
call, a `while_loop` over the step's graph that inductor's C++ wrapper runs."""

import functools
import operator
import types

# Whether `compiled_steps` runs a CPU loop's steps after the first as one call.
ENABLED = True
# The callers of `run_rest`, one per code of a loop's body, count of carried
# tensors and compiler.
_CALLERS = {}
# The keys of `_CALLERS` whose step Dynamo would not trace as one graph: their
# loops run step by step.
_REFUSED = set()


def run_rest(step, compiled_step, leaves, go_on, max_steps, key, compiler):
    """Runs a loop's steps after its first in one compiled call.

    Each call of a compiled step costs torch about 0.4 ms on the CPU besides
    its arithmetic (Dynamo's frame and cache lookup, the AOT wrapper,
    inductor's Python wrapper), where XLA runs one `while`. Here Dynamo traces
    one step of the tensors it changes, with all its guards, and hands the
    graph to a backend that compiles a `while_loop` over it (`compile_loop`:
    the loop runs in inductor's C++ wrapper, which reads the condition
    there). The tensors a step returns as it received them (learnt from the
    first step: the same objects come back) stay out of the carried ones, as
    `while_loop` wants. Where the graph is not one a loop can carry (a count
    of outputs that differs, as when a step returns in one place a tensor it
    received in another), the backend compiles the step alone and this loop
    goes on step by step;
    where Dynamo cannot trace the step as one graph, every later loop of that
    `key` does. Shapes are static: each new shape compiles its own loop.

    Args:
        step: `step(*leaves) -> (leaves, go_on)`, one step and the condition
            of the next, of a tuple of tensors.
        compiled_step: `step` compiled alone, for the first step.
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
        step-by-step loop goes on from while `go_on` (the count of steps run
        where the trace was refused or the step was compiled alone; `go_on`
        is False where the `while_loop` ran).
    """
    import torch

    if not bool(go_on):
        return leaves, go_on, 0
    new, go_on = compiled_step(*leaves)
    if max_steps <= 1 or not bool(go_on):
        return new, go_on, 1
    carried = tuple(i for i, (a, b) in enumerate(zip(new, leaves)) if a is not b)
    fixed = tuple(None if i in carried else leaf for i, leaf in enumerate(new))
    key = (key, len(carried), compiler)
    if key in _REFUSED:
        return new, go_on, 1
    caller = _caller(key, compiler)

    def rest(*values):
        full = list(fixed)
        for i, value in zip(carried, values):
            full[i] = value
        out, go = step(*full)
        return tuple(out[i] for i in carried) + (go,)

    values = tuple(new[i] for i in carried)
    try:
        *values, go_on = caller(rest, *values)
    except torch._dynamo.exc.TorchDynamoException:
        # Not one graph (a read back to the host, say): step by step, where
        # any error of the step's own is raised again.
        _REFUSED.add(key)
        return new, go_on, 1
    # A step compiled alone (the backend's fallback) returns after one step.
    steps = 2
    while steps < max_steps and bool(go_on):
        *values, go_on = caller(rest, *values)
        steps += 1
    full = list(fixed)
    for i, value in zip(carried, values):
        full[i] = value
    return tuple(full), go_on, steps


def compile_loop(gm, example_inputs):
    """Inductor, with the loop in C++ (`cpp_wrapper`: its Python wrapper would
    run the body as a Python function each step) and the loop's graph in
    inductor's cache, whose key holds the body's and condition's graphs (it
    takes no `while_loop` unless told)."""
    import torch
    import torch._inductor.config as inductor
    from torch._inductor.compile_fx import compile_fx

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
    """A `torch.compile` backend: the graph of one step of `run_rest`'s
    `rest`, compiled as a `while_loop` that runs it until its condition is
    False; the step alone where its graph does not fit."""
    loop = _while_graph(gm)
    if loop is not None:
        try:
            return compiler(loop, example_inputs)
        except Exception:  # whatever inductor or `while_loop` refuses
            pass
    return compiler(gm, example_inputs)


def _while_graph(gm):
    """The graph of `while_loop(cond, step, carried + (go,), others)` for the
    graph of one step, or None.

    The step's inputs are the carried tensors, `rest`'s arguments (Dynamo's
    source `L['args'][i]`), and the tensors it reads besides (weights, the
    encoder's outputs), which the loop passes to every step. Its outputs are
    the carried tensors in their order, then the condition.
    """
    import torch
    import torch.fx as fx
    from torch._higher_order_ops.while_loop import while_loop_op

    inputs = [node for node in gm.graph.nodes if node.op == "placeholder"]
    (outputs,) = [node for node in gm.graph.nodes if node.op == "output"]
    outputs = outputs.args[0]
    count = len(outputs) - 1
    position = {}
    for j, node in enumerate(inputs):
        source = getattr(node.meta.get("grapharg"), "source", None)
        name = getattr(source, "name", "")
        if name.startswith("L['args'][") and name.count("[") == 2:
            position[int(name[len("L['args'][") : -1])] = j
    if count < 1 or sorted(position) != list(range(count)):
        return None
    carried = [position[i] for i in range(count)]
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
