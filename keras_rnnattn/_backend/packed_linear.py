"""A Dense of a compiled torch decoding step on the CPU, on oneDNN's packed weights.

oneDNN multiplies faster by a weight laid out in its own blocked format, packed
once ("prepacked"), than ATen's `addmm` does by the plain weight: at the output
layer of a decoding step, 64 x 256 rows by 4,000 tokens, 1.47 ms against 2.16
ms on one thread, 5.6 against 7.5 ms at 256 rows (beam 4). Inductor cannot
take a packed tensor as an input of a compiled graph, and its `freezing` would
make every weight a constant of the graph. So a custom op takes the plain
kernel, and packs it the first time it sees it, keeping the packed copy beside
the kernel: while the same tensor holds the same values (PyTorch's version
counter, which every in-place write moves, such as Keras's `assign`), a later
step reuses it.

Only inference runs here (the op has no gradient), on float32 CPU tensors.
"""

import weakref

import keras

_PACKED = {}  # id(kernel) -> (weakref to kernel, version, data pointer, packed)


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
        packed = _pack(kernel)
        return torch.ops.mkldnn._linear_pointwise(
            x.contiguous(), packed, bias, "none", [], ""
        )

    @packed_linear.register_fake
    def _(x, kernel, bias):
        return x.new_empty((x.shape[0], kernel.shape[1]))

    return packed_linear


_OP = _define_op() if keras.backend.backend() == "torch" else None


def packs(x, kernel):
    """Whether `packed_dense` runs for these tensors: torch code being compiled
    without gradients, float32 on the CPU, where PyTorch has oneDNN."""
    import torch

    return (
        torch.compiler.is_compiling()
        and not torch.is_grad_enabled()
        and x.device.type == "cpu"
        and x.dtype == kernel.dtype == torch.float32
        and _OP is not None
    )


def packed_dense(x, kernel, bias):
    """`x @ kernel + bias` through the packed kernel.

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
