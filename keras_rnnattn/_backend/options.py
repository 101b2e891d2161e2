"""The torch paths the package may take, as one frozen value set in a block."""

import contextlib
import dataclasses


@dataclasses.dataclass(frozen=True)
class TorchOptions:
    """Which torch paths the package takes; read where a path is chosen.

    Each default is set by evidence, which the field says; a GPU check
    (`scripts/gpu_check.sh OUT --operator-ab`) decides the two experimental
    ones.

    Args:
        whole_loop: bool, a compiled decoding loop on the CPU runs its steps
            as one inductor `while_loop` (`decoding/whole_loop.py`). On by
            default: measured on the CPU (benchmarks/decode.py), fewer host
            calls and the same tokens.
        cuda_graphs: bool, a compiled decoding loop on an NVIDIA GPU replays
            its blocks of steps from one captured CUDA graph
            (`experimental/captured_loop.py`). Off by default: never run on
            its hardware.
        rnn_operator: bool, a large GRU or LSTM in a compiled torch train
            step is one operator of the graph (cuDNN's or oneDNN's kernels,
            `experimental/torch_rnn_op.py`) instead of running at a graph
            break. Off by default: 3-30% slower on the CPU, not measured on a
            GPU.

    Example:

    >>> TorchOptions().whole_loop, TorchOptions().cuda_graphs
    (True, False)
    """

    whole_loop: bool = True
    cuda_graphs: bool = False
    rnn_operator: bool = False

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, bool):
                raise ValueError(
                    f"`{field.name}` must be a bool. Received: {field.name}={value!r}"
                )


# The options in force, last: `torch_options` pushes and pops, nothing else
# writes it. A list, not a ContextVar: Dynamo reads it while it traces a train
# step (a ContextVar's `get` is a graph break there).
_IN_FORCE = [TorchOptions()]


def current_torch_options():
    """The `TorchOptions` in force here (the defaults outside any block).

    Returns:
        `TorchOptions`.

    Example:

    >>> current_torch_options() == TorchOptions()
    True
    """
    return _IN_FORCE[-1]


@contextlib.contextmanager
def torch_options(**changes):
    """Within the block, the torch paths of `TorchOptions` as given.

    A compiled function keeps the path it was compiled with: set the options
    around the first call of what they change (a decoding loop's compilation,
    a train step's).

    Args:
        **changes: `TorchOptions` fields and their bool values; the others
            keep their values in force.

    Returns:
        A context manager that gives the `TorchOptions` in force inside it.

    Example:

    >>> with torch_options(cuda_graphs=True) as options:
    ...     options.cuda_graphs, current_torch_options().cuda_graphs
    (True, True)
    >>> current_torch_options().cuda_graphs
    False
    """
    fields = {field.name for field in dataclasses.fields(TorchOptions)}
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise ValueError(
            f"Unknown torch options {unknown}: the options are {sorted(fields)}."
        )
    options = dataclasses.replace(current_torch_options(), **changes)
    _IN_FORCE.append(options)
    try:
        yield options
    finally:
        _IN_FORCE.pop()
