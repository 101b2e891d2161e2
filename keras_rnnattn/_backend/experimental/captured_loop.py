"""Torch on an NVIDIA GPU: a compiled decoding loop's steps replayed from one
captured CUDA graph, a block of steps a replay, between two reads of the
stop condition."""

# The fewest blocks left in a loop for capturing to be worth it: capturing a
# block costs the host what running it step by step does.
MIN_BLOCKS = 2
# The steps' keys whose capture failed: their loops go on step by step.
_REFUSED = set()
# One capture stream per device, warmed by its first capture.
_STREAMS = {}


def run_blocks(step, leaves, go_on, first, max_steps, every, key, capture=None):
    """Runs a loop's steps `every` at a time from one captured graph.

    Each compiled step costs the host about 0.4 ms on the CPU to launch (Dynamo's
    frame, the AOT wrapper, inductor's wrapper and one launch per kernel),
    where the GPU runs a step of a small decoder in tens of microseconds:
    a loop of compiled steps waits on the host. Here the block of `every`
    steps is captured once per call (NVIDIA's CUDA graphs, as PyTorch's
    `torch.cuda.graph` records them), over copies of the loop's tensors
    that the graph updates in place, and each replay runs the whole block
    with one launch. The condition is read after each replay, as the step
    by step loop reads it every `every` steps; the steps that do not fill a
    block are left to the caller. A step must take and return tensors only,
    read nothing back to the host and draw no random numbers (the decoders
    draw theirs before the loop); what it closes over stays alive for the
    call, so nothing captured outlives it.

    Args:
        step: `step(*leaves) -> (leaves, go_on)`, one compiled step and the
            condition of the next, of a tuple of tensors.
        leaves: tuple of tensors, the loop's values before step `first`.
        go_on: scalar bool tensor, whether step `first` is to run.
        first: int, the index of the next step, a multiple of `every`, after
            which the step has been compiled for these shapes.
        max_steps: Python int, the most steps.
        every: Python int >= 1, the steps of a block.
        key: hashable, what tells loops' steps apart (their body's code and
            the tensors' shapes).
        capture: optional `capture(block, warm_up) -> replay`, what records
            `block()` (which reads and writes copies of `leaves` in place
            and returns the condition) and returns a function that runs it
            again and returns its condition; `warm_up()` runs one step and
            writes nothing. None: a CUDA graph (`cuda_capture`).

    Returns:
        `(leaves, go_on, step)`: the values after the steps run here, the
        condition of the next step, and the index of the step the caller
        goes on from (`first` where nothing ran here).
    """
    import torch

    blocks = (max_steps - first) // every
    if blocks < MIN_BLOCKS or key in _REFUSED or not bool(go_on):
        return leaves, go_on, first
    if not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return leaves, go_on, first
    if capture is None:
        if not all(leaf.is_cuda for leaf in leaves):
            return leaves, go_on, first
        capture = cuda_capture
    static = _copies(leaves)

    def block():
        values = static
        for _ in range(every):
            values, go = step(*values)
        _write_into(static, values)
        return go

    def warm_up():
        step(*static)

    try:
        replay = capture(block, warm_up)
    except Exception:  # whatever the device refuses to capture
        _REFUSED.add(key)
        return leaves, go_on, first
    step_index = first
    for _ in range(blocks):
        go_on = replay()
        step_index += every
        if not bool(go_on):
            break
    return static, go_on.clone(), step_index


def _write_into(static, values):
    """Copies each value into its place of `static`; a value that shares
    memory with one of `static`'s tensors (a view of an input the step
    returns in another place) is copied aside first, so that no copy reads
    what another has written."""
    memory = {tensor.untyped_storage().data_ptr() for tensor in static}
    values = [
        value.clone()
        if value is not into and value.untyped_storage().data_ptr() in memory
        else value
        for into, value in zip(static, values)
    ]
    for into, value in zip(static, values):
        if value is not into:
            into.copy_(value)


def _copies(leaves):
    """A copy of each tensor, the same copy where a tensor comes twice (a
    step compiled for two arguments that are one tensor is guarded on it)."""
    made = {}
    for leaf in leaves:
        if id(leaf) not in made:
            made[id(leaf)] = leaf.clone()
    return tuple(made[id(leaf)] for leaf in leaves)


def cuda_capture(block, warm_up):
    """`block`'s kernels captured in one CUDA graph; returns its replay.

    One step runs first on the stream the graph is captured on: its
    libraries' lazy set-up for that stream (cuBLAS's workspace among it)
    must not happen during the capture. Replays run on the current stream.
    """
    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    stream = _STREAMS.get(device)
    if stream is None:
        stream = _STREAMS[device] = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        warm_up()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        go_on = block()

    def replay():
        graph.replay()
        return go_on

    return replay
