"""Torch: a fused GRU/LSTM as one operator of a compiled graph, with its backward.

Traced by `torch.compile`, `torch.lstm` and `torch.gru` are unrolled into
their steps (AOTAutograd decomposes them), and PyTorch's `nn.LSTM` breaks the
graph instead. Each graph break costs a trained step Dynamo's guards, another
compiled forward and backward and their wrappers on the host at every call:
the fast path's train step ran as 17 to 22 graphs. Here the fused kernel is a
`torch.library` custom operator, opaque to the compiler, with its gradient
registered: the train step stays one graph around it.

- `cudnn_rnn`: a GRU or LSTM on an NVIDIA GPU runs cuDNN's forward and
  backward (`aten._cudnn_rnn`, `aten._cudnn_rnn_backward`, the kernels
  `torch.lstm` runs eagerly there), the backward reading the forward's reserve
  and flat weights;
- `mkldnn_lstm`: an LSTM on the CPU runs oneDNN's layer forward and backward
  (`aten.mkldnn_rnn_layer`, `aten.mkldnn_rnn_layer_backward`), the backward
  reading the forward's workspace;
- `rnn_recompute`: any other layer (a GRU on the CPU, another device): the
  forward runs `torch.gru`/`torch.lstm` without recording, and the backward
  runs it again under `torch.func.vjp` (one more forward pass, and on the CPU
  ATen's unfused backward: a slow path, kept for completeness).

The aten kernels' fake (meta) versions give their workspaces size 0; the
operators' fake kernels give the sizes the kernels write, found by running the
layer once per shape (an output of unknown size would break the graph).

Each gives the gradients of `torch.lstm`/`torch.gru` (`tests/layers/
test_torch_rnn_op.py` on the CPU; on a GPU, `scripts/gpu_check.py`'s
`check_fused_rnn`). `torch_options(rnn_operator=True)` puts them in compiled train
steps.
"""

import keras_rnnattn._backend._torch_private as _torch_private

# The operators' library name.
NAMESPACE = "keras_rnnattn"
# oneDNN's (ideep's) code for an LSTM layer.
_MKLDNN_LSTM = 2

_OPS = {}


def fused_rnn(kind, inputs, states, params):
    """The output sequence `(B, T, units)` of a fused GRU/LSTM, one graph node.

    Args:
        kind: `"gru"` or `"lstm"`.
        inputs: `(B, T, input_dim)`.
        states: `[h0]` or `[h0, c0]`, each `(1, B, units)`.
        params: `[w_ih (G, input_dim), w_hh (G, units), b_ih (G,), b_hh (G,)]`
            in PyTorch's gate order, contiguous.

    Returns:
        `(B, T, units)`, `torch.gru`/`torch.lstm`'s output, and its gradients
        under `torch.compile` without a graph break.

    Example:

    >>> import torch
    >>> x, h = torch.zeros(2, 3, 4), torch.zeros(1, 2, 5)
    >>> params = [torch.zeros(15, 4), torch.zeros(15, 5), torch.zeros(15), torch.zeros(15)]
    >>> tuple(fused_rnn("gru", x, [h], params).shape)  # (B, T, units)
    (2, 3, 5)
    """
    ops = _operators()
    c0 = states[1] if kind == "lstm" else None
    if inputs.device.type == "cuda" and ops["has_cudnn"]:
        x = inputs.transpose(0, 1).contiguous()  # (T, B, input_dim)
        y, _, _ = ops["cudnn_rnn"](x, states[0], c0, *params)
        return y.transpose(0, 1)  # (B, T, units)
    if kind == "lstm" and uses_mkldnn(inputs):
        x = inputs.transpose(0, 1).contiguous()  # (T, B, input_dim)
        y, _, _, _ = ops["mkldnn_lstm"](x, *states, *params)
        return y.transpose(0, 1)  # (B, T, units)
    return ops["rnn_recompute"](inputs, states[0], c0, *params)


def uses_mkldnn(inputs):
    """Whether an LSTM over `inputs` runs oneDNN's layer kernels (CPU, float32)."""
    import torch

    return (
        inputs.device.type == "cpu"
        and inputs.dtype == torch.float32
        and _operators()["has_mkldnn"]
    )


def _operators():
    """The operators by name, defined at the first call: call it before
    compiling a step that runs them (defining them while Dynamo traces breaks
    the graph)."""
    if not _OPS:
        _define()
    return _OPS


def _run(x, h0, c0, params, train=True):
    """`torch.lstm`/`torch.gru` on batch-major `x`: the output sequence."""
    import torch

    if c0 is not None:
        args = (x, (h0, c0), params, True, 1, 0.0, train, False, True)
        return torch.lstm(*args)[0]
    return torch.gru(x, h0, params, True, 1, 0.0, train, False, True)[0]


_WORKSPACES = {}


def _workspace_size(steps, batch, input_dim, units):
    """The bytes of oneDNN's LSTM workspace for these sizes, found by running
    the layer once on zeros (a fixed function of the sizes); None for a
    symbolic size. Known sizes keep the compiled graph static: an output of
    unknown size breaks it."""
    import torch

    unset_fake_temporarily = _torch_private.unset_fake_temporarily()

    sizes = (steps, batch, input_dim, units)
    if not all(isinstance(n, int) for n in sizes):
        return None
    if sizes not in _WORKSPACES:
        with unset_fake_temporarily(), torch.enable_grad():
            x = torch.zeros(steps, batch, input_dim)
            h = torch.zeros(1, batch, units)
            w_ih, w_hh = (
                torch.zeros(4 * units, input_dim),
                torch.zeros(4 * units, units),
            )
            b = torch.zeros(4 * units)
            out = torch.ops.aten.mkldnn_rnn_layer(
                x, w_ih, w_hh, b, b, h, h, False, [], _MKLDNN_LSTM, units, 1,
                True, False, False, True,
            )  # fmt: skip
        _WORKSPACES[sizes] = out[3].numel()
    return _WORKSPACES[sizes]


_CUDNN_SIZES = {}
# cuDNN's codes (cudnnRNNMode_t) for the two layers.
_CUDNN_MODES = {"lstm": 2, "gru": 3}


def _cudnn_forward(x, h0, c0, params):
    """`aten._cudnn_rnn` of one time-major layer: output, reserve, flat weights."""
    import torch

    mode = _CUDNN_MODES["lstm" if c0 is not None else "gru"]
    y, _, _, reserve, weight_buf = torch.ops.aten._cudnn_rnn(
        x, params, 4, None, h0, c0, mode, h0.shape[-1], 0, 1, False, 0.0, True,
        False, [], None,
    )  # fmt: skip
    return y, reserve, weight_buf


def _cudnn_sizes(x, h0, c0, params):
    """The sizes of cuDNN's reserve and flat weights for these inputs, found by
    running the layer once on zeros; None for a symbolic size."""
    import torch

    unset_fake_temporarily = _torch_private.unset_fake_temporarily()

    tensors = [x, h0] + ([c0] if c0 is not None else []) + list(params)
    shapes = tuple(tuple(t.shape) for t in tensors)
    if not all(isinstance(n, int) for shape in shapes for n in shape):
        return None
    key = (shapes, x.dtype, str(x.device))
    if key not in _CUDNN_SIZES:
        with unset_fake_temporarily():
            real = [
                torch.zeros(t.shape, dtype=t.dtype, device=t.device) for t in tensors
            ]
            h, c = real[1], (real[2] if c0 is not None else None)
            _, reserve, weight_buf = _cudnn_forward(real[0], h, c, real[-4:])
        _CUDNN_SIZES[key] = (reserve.numel(), weight_buf.numel())
    return _CUDNN_SIZES[key]


def _define():
    import torch

    lib = f"{NAMESPACE}::"
    # The arguments of one layer (the GRU has no c0).
    layer = "Tensor x, Tensor h0, Tensor? c0, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh"

    @torch.library.custom_op(
        lib + "cudnn_rnn",
        mutates_args=(),
        schema=f"({layer}) -> (Tensor, Tensor, Tensor)",
    )
    def cudnn_rnn(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        return _cudnn_forward(x, h0, c0, [w_ih, w_hh, b_ih, b_hh])

    @cudnn_rnn.register_fake
    def _(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        sizes = _cudnn_sizes(x, h0, c0, [w_ih, w_hh, b_ih, b_hh])
        if sizes is None:  # a symbolic shape
            ctx = torch.library.get_ctx()
            sizes = (ctx.new_dynamic_size(), ctx.new_dynamic_size())
        y = x.new_empty((*x.shape[:2], h0.shape[-1]))  # (T, B, units)
        reserve = x.new_empty((sizes[0],), dtype=torch.uint8)
        return y, reserve, x.new_empty((sizes[1],))

    @torch.library.custom_op(
        lib + "cudnn_rnn_backward",
        mutates_args=(),
        schema=f"(Tensor grad_y, {layer}, Tensor y, Tensor reserve, "
        "Tensor weight_buf) -> Tensor[]",
    )
    def cudnn_rnn_backward(
        grad_y, x, h0, c0, w_ih, w_hh, b_ih, b_hh, y, reserve, weight_buf
    ):
        lstm = c0 is not None
        mode = _CUDNN_MODES["lstm" if lstm else "gru"]
        dx, dh0, dc0, dw = torch.ops.aten._cudnn_rnn_backward(
            x, [w_ih, w_hh, b_ih, b_hh], 4, weight_buf, h0, c0, y,
            grad_y.contiguous(), None, None, mode, h0.shape[-1], 0, 1, False, 0.0,
            True, False, [], None, reserve, [True, True, lstm, True],
        )  # fmt: skip
        return [dx, dh0, *dw] + ([dc0] if lstm else [])

    @cudnn_rnn_backward.register_fake
    def _(grad_y, *inputs):
        return _fake_grads(*inputs[:7])

    def cudnn_setup(ctx, inputs, output):
        _save(ctx, inputs, output)

    def cudnn_backward(ctx, grad_y, grad_reserve, grad_weight_buf):
        grads = cudnn_rnn_backward(grad_y, *_saved(ctx))
        return _input_grads(grads, ctx.lstm)

    torch.library.register_autograd(
        lib + "cudnn_rnn", cudnn_backward, setup_context=cudnn_setup
    )

    @torch.library.custom_op(
        lib + "mkldnn_lstm",
        mutates_args=(),
        schema=f"({layer.replace('Tensor?', 'Tensor')}) -> (Tensor, Tensor, Tensor, Tensor)",
    )
    def mkldnn_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        # oneDNN writes its workspace (what the backward reads) only while
        # gradients are recorded; a compiled forward runs without.
        with torch.enable_grad():
            y, hy, cy, workspace = torch.ops.aten.mkldnn_rnn_layer(
                x, w_ih, w_hh, b_ih, b_hh, h0, c0, False, [], _MKLDNN_LSTM,
                h0.shape[-1], 1, True, False, False, True,
            )  # fmt: skip
        return y, hy, cy, workspace

    @mkldnn_lstm.register_fake
    def _(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        size = _workspace_size(*x.shape, h0.shape[-1])
        if size is None:  # a symbolic shape
            size = torch.library.get_ctx().new_dynamic_size()
        y = x.new_empty((*x.shape[:2], h0.shape[-1]))  # (T, B, units)
        return (
            y,
            h0.new_empty(h0.shape),
            c0.new_empty(c0.shape),
            x.new_empty((size,), dtype=torch.uint8),
        )

    def mkldnn_setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs, *output)

    def mkldnn_backward(ctx, grad_y, grad_hy, grad_cy, grad_workspace):
        x, h0, c0, w_ih, w_hh, b_ih, b_hh, y, hy, cy, workspace = ctx.saved_tensors
        dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0 = (
            torch.ops.aten.mkldnn_rnn_layer_backward(
                x, w_ih, w_hh, b_ih, b_hh, h0, c0, y, hy, cy, grad_y, grad_hy,
                grad_cy, False, _MKLDNN_LSTM, h0.shape[-1], 1, True, True, False,
                [], False, workspace,
            )
        )  # fmt: skip
        return dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh

    torch.library.register_autograd(
        lib + "mkldnn_lstm", mkldnn_backward, setup_context=mkldnn_setup
    )

    @torch.library.custom_op(
        lib + "rnn_recompute", mutates_args=(), schema=f"({layer}) -> Tensor"
    )
    def rnn_recompute(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        with torch.no_grad():
            # Contiguous, as the fake kernel says (the kernels write time-major);
            # in inference mode (cuDNN keeps no reserve for a backward pass).
            y = _run(x, h0, c0, [w_ih, w_hh, b_ih, b_hh], train=False)
            return y.contiguous()

    @rnn_recompute.register_fake
    def _(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        return x.new_empty((*x.shape[:2], h0.shape[-1]))  # (B, T, units)

    @torch.library.custom_op(
        lib + "rnn_recompute_backward",
        mutates_args=(),
        schema=f"(Tensor grad_y, {layer}) -> Tensor[]",
    )
    def rnn_recompute_backward(grad_y, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        # The operator runs below autograd: `torch.func.vjp` records by itself.
        def run(x, h0, w_ih, w_hh, b_ih, b_hh, *c0s):
            return _run(x, h0, c0s[0] if c0s else None, [w_ih, w_hh, b_ih, b_hh])

        primals = (x, h0, w_ih, w_hh, b_ih, b_hh) + ((c0,) if c0 is not None else ())
        # Without oneDNN's LSTM (a float32 one on the CPU runs `mkldnn_lstm`):
        # its workspace is left undefined in a compiled backward pass.
        enabled = _torch_private.mkldnn_enabled()
        _torch_private.set_mkldnn_enabled(False)
        try:
            _, vjp = torch.func.vjp(run, *primals)
            return [g.contiguous() for g in vjp(grad_y)]
        finally:
            _torch_private.set_mkldnn_enabled(enabled)

    @rnn_recompute_backward.register_fake
    def _(grad_y, *inputs):
        return _fake_grads(*inputs)

    def recompute_setup(ctx, inputs, output):
        _save(ctx, inputs)

    def recompute_backward(ctx, grad_y):
        grads = rnn_recompute_backward(grad_y.contiguous(), *_saved(ctx))
        return _input_grads(grads, ctx.lstm)

    torch.library.register_autograd(
        lib + "rnn_recompute", recompute_backward, setup_context=recompute_setup
    )
    _OPS.update(
        cudnn_rnn=cudnn_rnn,
        mkldnn_lstm=mkldnn_lstm,
        rnn_recompute=rnn_recompute,
        # Read once: Dynamo does not trace `torch.backends.*.is_available`.
        has_cudnn=torch.backends.cudnn.is_available(),
        has_mkldnn=torch.backends.mkldnn.is_available(),
    )


def _fake_grads(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    """A backward operator's fake gradients: `[dx, dh0, dw_ih, dw_hh, db_ih,
    db_hh(, dc0)]`, each shaped as its input."""
    leaves = [x, h0, w_ih, w_hh, b_ih, b_hh] + ([c0] if c0 is not None else [])
    return [t.new_empty(t.shape) for t in leaves]


def _save(ctx, inputs, output=()):
    """Saves an operator's tensor inputs (no GRU c0) and `output` for its backward."""
    ctx.lstm = inputs[2] is not None
    ctx.save_for_backward(*(t for t in inputs if t is not None), *output)


def _saved(ctx):
    """The saved tensors, with None as the GRU's absent c0."""
    saved = list(ctx.saved_tensors)
    if not ctx.lstm:
        saved.insert(2, None)
    return saved


def _input_grads(grads, lstm):
    """`[dx, dh0, dw_ih, dw_hh, db_ih, db_hh(, dc0)]` in the operators' order of
    inputs: `(dx, dh0, dc0 or None, dw_ih, dw_hh, db_ih, db_hh)`."""
    dx, dh0, *dw = grads[:6]
    return (dx, dh0, grads[6] if lstm else None, *dw)
