"""How a decoding loop runs on each backend: one compiled while loop, or a Python
loop that reads nothing back from the device inside."""

import contextlib

import keras
from keras import ops

# Torch: the steps between two reads of the stop condition.
STOP_CHECK_EVERY = 8
# Torch: what each loop's step function is wrapped in (`step_wrapper`).
_STEP_WRAPPERS = []


@contextlib.contextmanager
def step_wrapper(wrap):
    """Within the block, torch decoding loops run `wrap(body)` as their step.

    For compiling or capturing the step: `torch.compile(body,
    fullgraph=True)` succeeds only for a step without a graph break, which
    a read back to the host would cause (`tests/decoding/test_torch_steps.py`).

    Args:
        wrap: `wrap(body) -> body`.
    """
    _STEP_WRAPPERS.append(wrap)
    try:
        yield
    finally:
        _STEP_WRAPPERS.pop()


def decoding_loop(cond, body, loop_vars, max_steps, check_every=STOP_CHECK_EVERY):
    """`keras.ops.while_loop(cond, body, loop_vars)` for a loop of at most
    `max_steps` steps whose extra steps change nothing.

    JAX and TensorFlow run the loop as one `while_loop` (compiled with the
    function around it). Keras's torch `while_loop` is a Python loop that
    reads `cond` back to the host before every step, so on a GPU each step
    waits for the one before it to finish. Here torch runs `body` up to
    `max_steps` times and reads `cond` only every `check_every` steps: the
    steps in between are queued without waiting. The decoders' bodies keep a
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
    if _STEP_WRAPPERS:
        body = _STEP_WRAPPERS[-1](body)
    for step in range(max_steps):
        if step % check_every == 0 and not bool(cond(*loop_vars)):
            break
        loop_vars = tuple(body(*loop_vars))
    return loop_vars
