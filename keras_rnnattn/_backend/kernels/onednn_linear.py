"""2-D products of torch inference on the CPU through oneDNN, where it multiplies faster.

PyTorch's CPU `addmm` and `mm` call MKL, whose float32 GEMM ran at about 92
GFLOP/s on one core of an AMD EPYC with AVX-512, where oneDNN's (the library
behind PyTorch's fused RNN kernels, and TensorFlow's matmul) ran the same
products at 150-230 (64 or 256 rows by 192 or 384 inputs by 576 or 2,000
units: 2.1-2.3x faster, as fast as XLA's). On another host (with AMX) `addmm`
was the faster at 64 rows. So the op times both products once per shape and
thread count, at its first call, and keeps the faster. oneDNN multiplies by the
kernel as it lies (`kernel.t()`, a view: no copy, no packing), so any kernel
tensor works, a weight or one computed in the step (a slice, the fixnorm
layer's normalized blocks). Inductor cannot lower oneDNN's linear on a plain
weight, so the product is a custom op, which inductor calls as it is. A product
of fewer than `MIN_MULTIPLY_ADDS` keeps ATen's: the op's own cost (a call into
Python), about 25 us on one core in a compiled step, is more than oneDNN saves
there.

Only inference runs here (the op has no gradient), on float32 CPU tensors.
"""

import time

import keras

# The smallest product (rows x inputs x units) that goes through the op.
MIN_MULTIPLY_ADDS = 1 << 22
# The timed calls of each product when the op chooses between them.
TIMED_CALLS = 5
# (rows, inputs, units, has a bias, threads) -> whether oneDNN ran faster.
_FASTER = {}


def _onednn(x, kernel, bias):
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, kernel.t(), bias, "none", [], "")


def _aten(x, kernel, bias):
    import torch

    return torch.mm(x, kernel) if bias is None else torch.addmm(bias, x, kernel)


def _onednn_is_faster(x, kernel, bias):
    """Whether `x @ kernel (+ bias)` took less time in oneDNN than in ATen: the
    least of `TIMED_CALLS` calls each, taken in turn."""
    best = [float("inf")] * 2
    for _ in range(TIMED_CALLS + 1):  # the first call of each sets it up
        for i, product in enumerate((_onednn, _aten)):
            start = time.perf_counter()
            product(x, kernel, bias)
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0] < best[1]


def _define_op():
    """The custom op `keras_rnnattn::onednn_linear`, or None where PyTorch has no
    oneDNN or not its (private) linear op (defined once, at import on torch)."""
    import torch

    if not torch.backends.mkldnn.is_available() or not hasattr(
        torch.ops.mkldnn, "_linear_pointwise"
    ):
        return None

    @torch.library.custom_op("keras_rnnattn::onednn_linear", mutates_args=())
    def onednn_linear(
        x: torch.Tensor, kernel: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        x = x.contiguous()
        if kernel.stride(-1) != 1:
            kernel = kernel.contiguous()
        key = (x.shape[0], *kernel.shape, bias is not None, torch.get_num_threads())
        faster = _FASTER.get(key)
        if faster is None:
            faster = _FASTER[key] = _onednn_is_faster(x, kernel, bias)
        return (_onednn if faster else _aten)(x, kernel, bias)

    @onednn_linear.register_fake
    def _(x, kernel, bias):
        return x.new_empty((x.shape[0], kernel.shape[1]))

    return onednn_linear


_OP = _define_op() if keras.backend.backend() == "torch" else None


def uses_onednn(x, kernel):
    """Whether `onednn_dense` runs for these tensors: torch without gradients,
    not exporting (`torch.export` and ONNX know no such op), 2-D float32 on the
    CPU, where PyTorch has oneDNN, for a product of at least `MIN_MULTIPLY_ADDS`
    (shapes known when traced)."""
    import torch

    return (
        _OP is not None
        and isinstance(x, torch.Tensor)
        and isinstance(kernel, torch.Tensor)
        and not torch.is_grad_enabled()
        and not torch.compiler.is_exporting()
        and len(x.shape) == 2
        and x.device.type == "cpu"
        and x.dtype == kernel.dtype == torch.float32
        and x.shape[0] * kernel.shape[0] * kernel.shape[1] >= MIN_MULTIPLY_ADDS
    )


def measured_faster(rows, kernel, bias=True):
    """Whether the op multiplies `rows` rows by `kernel` in oneDNN: its choice
    for that shape, timed now on placeholder tensors if it was never made.
    Eagerly only: False (ATen's) in code being traced.

    Args:
        rows: int.
        kernel: `(d, units)`.
        bias: whether the product adds a bias.

    Returns:
        bool.
    """
    import torch

    if torch.compiler.is_compiling():
        return False
    key = (rows, *kernel.shape, bias, torch.get_num_threads())
    if key not in _FASTER:
        d, units = kernel.shape
        sample = torch.ones(rows, d), torch.ones(d, units)
        _FASTER[key] = _onednn_is_faster(*sample, torch.ones(units) if bias else None)
    return _FASTER[key]


def onednn_dense(x, kernel, bias=None):
    """`x @ kernel (+ bias)` through the op: in oneDNN, or in ATen where that
    measured faster for this shape.

    Args:
        x: float32 `(N, d)`.
        kernel: float32 `(d, units)`.
        bias: optional float32 `(units,)`.

    Returns:
        `(N, units)`.

    Example:

    >>> import torch
    >>> x, kernel, bias = torch.ones(2, 3), torch.ones(3, 4), torch.arange(4.0)
    >>> onednn_dense(x, kernel, bias)[0].tolist()
    [3.0, 4.0, 5.0, 6.0]
    >>> onednn_dense(x, kernel)[0].tolist()
    [3.0, 3.0, 3.0, 3.0]
    """
    return _OP(x, kernel, bias)
