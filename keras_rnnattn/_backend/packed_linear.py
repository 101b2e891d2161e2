"""A Dense of a compiled torch decoding step on the CPU, on oneDNN's packed weights
where they are faster.

oneDNN multiplies faster by a weight laid out in its own blocked format, packed
once ("prepacked"), than ATen's `addmm` does by the plain weight on some
processors, and slower on others: at the output layer of a decoding step, 64 x
256 rows by 4,000 tokens on one thread, 1.47 against 2.16 ms on one host, 0.84
against 0.71 ms on another (with AMX), whose 256 rows (beam 4) still ran faster
packed (2.59 against 2.71 ms). So the op measures both products once per shape
and thread count, at its first call, and keeps the faster. Inductor cannot take
a packed tensor as an input of a compiled graph, and its `freezing` would make
every weight a constant of the graph. So a custom op takes the plain kernel,
and packs it the first time it sees it, keeping the packed copy beside the
kernel: while the same tensor holds the same values (PyTorch's version counter,
which every in-place write moves, such as Keras's `assign`), a later step
reuses it. A product of fewer than `MIN_MULTIPLY_ADDS` keeps `addmm` in the
graph: the op's own cost (a call into Python, oneDNN's primitive), about 30 us
on one core, is more than packing can save there.

Only inference runs here (the op has no gradient), on float32 CPU tensors.
"""

import time
import weakref

import keras

# The smallest product (rows x inputs x units) that goes through the op.
MIN_MULTIPLY_ADDS = 1 << 23
# The timed calls of each product when the op chooses between them.
TIMED_CALLS = 5
_PACKED = {}  # id(kernel) -> (weakref to kernel, version, data pointer, packed)
# (rows, inputs, units, threads) -> whether the packed product ran faster.
_FASTER = {}


def _pack(kernel):
    """oneDNN's packed `(units, d)` weight of a Dense kernel `(d, units)`."""
    import torch

    key = id(kernel)
    entry = _PACKED.get(key)
    stamp = (kernel._version, kernel.data_ptr())
    if entry is not None and entry[0]() is kernel and entry[1:3] == stamp:
        return entry[3]
    if entry is None or entry[0]() is not kernel:
        weakref.finalize(kernel, _PACKED.pop, key, None)
    packed = torch.ops.mkldnn._reorder_linear_weight(kernel.t().contiguous(), None)
    _PACKED[key] = (weakref.ref(kernel), *stamp, packed)
    return packed


def _linear(x, packed, bias):
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def _packed_is_faster(x, kernel, bias):
    """Whether `x @ kernel + bias` took less time on the packed kernel than
    in `addmm`: the least of `TIMED_CALLS` calls each, taken in turn."""
    import torch

    packed = _pack(kernel)
    products = (lambda: _linear(x, packed, bias), lambda: torch.addmm(bias, x, kernel))
    best = [float("inf")] * 2
    for _ in range(TIMED_CALLS + 1):  # the first call of each sets it up
        for i, product in enumerate(products):
            start = time.perf_counter()
            product()
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0] < best[1]


def _define_op():
    """The custom op `keras_rnnattn::packed_linear`, or None where PyTorch has
    no oneDNN or not its (private) packed-linear ops (defined once, at import on
    torch: a compiled step only calls it)."""
    import torch

    ops = ("_reorder_linear_weight", "_linear_pointwise")
    if not torch.backends.mkldnn.is_available() or not all(
        hasattr(torch.ops.mkldnn, op) for op in ops
    ):
        return None

    @torch.library.custom_op("keras_rnnattn::packed_linear", mutates_args=())
    def packed_linear(
        x: torch.Tensor, kernel: torch.Tensor, bias: torch.Tensor
    ) -> torch.Tensor:
        x = x.contiguous()
        key = (x.shape[0], *kernel.shape, torch.get_num_threads())
        faster = _FASTER.get(key)
        if faster is None:
            faster = _FASTER[key] = _packed_is_faster(x, kernel, bias)
            if not faster:  # no packed copy kept for nothing
                _PACKED.pop(id(kernel), None)
        if not faster:
            return torch.addmm(bias, x, kernel)
        return _linear(x, _pack(kernel), bias)

    @packed_linear.register_fake
    def _(x, kernel, bias):
        return x.new_empty((x.shape[0], kernel.shape[1]))

    return packed_linear


_OP = _define_op() if keras.backend.backend() == "torch" else None


def packs(x, kernel):
    """Whether `packed_dense` runs for these tensors: torch code being compiled
    without gradients, float32 on the CPU, where PyTorch has oneDNN, for a
    product of at least `MIN_MULTIPLY_ADDS` (shapes known when traced)."""
    import torch

    return (
        torch.compiler.is_compiling()
        and not torch.is_grad_enabled()
        and x.device.type == "cpu"
        and x.dtype == kernel.dtype == torch.float32
        and _OP is not None
        and x.shape[0] * kernel.shape[0] * kernel.shape[1] >= MIN_MULTIPLY_ADDS
    )


def packed_dense(x, kernel, bias):
    """`x @ kernel + bias` through the op: on the packed kernel, or in `addmm`
    where that measured faster for this shape.

    Args:
        x: float32 `(N, d)`.
        kernel: float32 `(d, units)`.
        bias: float32 `(units,)`.

    Returns:
        `(N, units)`.

    Example:

    >>> import torch
    >>> x, kernel, bias = torch.ones(2, 3), torch.ones(3, 4), torch.arange(4.0)
    >>> packed_dense(x, kernel, bias)[0].tolist()
    [3.0, 4.0, 5.0, 6.0]
    """
    return _OP(x, kernel, bias)
