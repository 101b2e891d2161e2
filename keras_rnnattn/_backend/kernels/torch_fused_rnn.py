"""Torch: where PyTorch's fused GRU/LSTM kernel runs when `torch.compile` traces it.

`torch.gru` and `torch.lstm` called inside a traced function are decomposed
into their steps, unrolled over time in the graph: oneDNN's (cuDNN's) fused
kernel and its backward pass are gone, and the graph grows with the sequence
length. PyTorch's own `nn.GRU`/`nn.LSTM` modules make Dynamo break the graph
instead, so that the fused kernel runs eagerly between two compiled parts
(`torch._dynamo.config.allow_rnn`, False by default). `run_rnn` does the same
for a large layer that trains under `torch.compile` (`compile(jit_compile=True)`,
Keras's compiled train step).

Measured on one CPU thread (AMD EPYC, `benchmarks/seq2seq_train.py`'s
Translators, a train step with `jit_compile=True`): the fast path (two LSTMs of
512 units, 30 steps, batch 64) 950 ms against 1,150 ms unrolled, and it
compiled in 44 s against 119 s; input feeding's 512-unit GRU encoder 1,313 ms
against 1,353 ms. A small layer stays in the graph: input feeding's 128-unit
GRU encoder (10 steps, batch 32) trained in 32.4 ms unrolled against 37.7 ms
with the graph break. A decoding search (no gradients) keeps the layer in its
compiled encoder (one graph: `tests/decoding/test_torch_steps.py`), a GRU there
as its steps where they multiply in oneDNN (`rnn_kernels._gru_by_steps`).

With `torch_options(rnn_operator=True)` the large layer is instead one operator of the compiled
graph (`torch_rnn_op.fused_rnn`: cuDNN's kernels on a GPU, oneDNN's LSTM on the
CPU, both with their own backward): each graph break costs the host Dynamo's
guards and another compiled forward and backward at every step, and on a GPU
the host's cost bounds a step. The fast path's train step ran as 22 graphs
with the breaks and as 4 without, Keras's own breaks left; at a size where the
arithmetic is negligible (`benchmarks/host_cost.py`, one CPU thread) its
compiled step took 5.0-6.3 ms against 10.7-14.8 ms (plain PyTorch's 3.5-5.2
ms). It is off by default: on the CPU oneDNN's LSTM operator trained the
fast/big step 3-4% slower in four A/B pairs (1,441-1,553 ms against
1,374-1,418 in the quietest), and a GRU, whose operator there recomputes its
forward pass for the backward, 30% slower (input feeding's big step:
2,059-2,232 ms against 1,599-1,679); on a GPU it is not measured yet
(`scripts/gpu_check.sh OUT_DIR --operator-ab`).
"""

import keras

import keras_rnnattn._backend._torch_private as _torch_private
from keras_rnnattn._backend.experimental.torch_rnn_op import fused_rnn
from keras_rnnattn._backend.options import current_torch_options

# Multiply-adds per row and step of a layer (gates x (inputs + units)) from which
# its fused kernel runs outside the compiled graph when trained: the fast path's
# 512-unit LSTM has 2,048 x 768 (1.6M), input feeding's 512-unit GRU 1,536 x 768
# (1.2M), its 128-unit GRU 384 x 256 (0.1M).
OUTSIDE_GRAPH_FROM = 1 << 20


def _first_output(run, *args):
    return run(*args)[0]


# Made at import: `torch.compiler.disable` called while Dynamo traces is itself a
# graph break, and one under Keras's `name_scope` makes Dynamo run the whole
# frame eagerly.
_OUTSIDE = []
if keras.backend.backend() == "torch":
    import torch

    _OUTSIDE.append(torch.compiler.disable(_first_output))


def call_fused_rnn(run, args, step_work):
    """`run(*args)[0]`: the output sequence of `torch.gru` or `torch.lstm`.

    Inside `torch.compile`, with gradients recorded, for a layer of at least
    `OUTSIDE_GRAPH_FROM` multiply-adds per row and step (and unless
    `torch._dynamo.config.allow_rnn` asks for RNNs in the graph), the call
    runs eagerly at a graph break: the fused kernel forward and backward.
    Elsewhere it is `run(*args)[0]` as it is (eagerly, the fused kernel).

    Args:
        run: `torch.gru` or `torch.lstm`.
        args: `run`'s arguments.
        step_work: int, the layer's multiply-adds per row and step.

    Returns:
        The output sequence, `run(*args)[0]`.

    Example:

    >>> import torch
    >>> x, h = torch.zeros(3, 2, 4), torch.zeros(1, 2, 5)
    >>> weights = [torch.zeros(15, 4), torch.zeros(15, 5), torch.zeros(15), torch.zeros(15)]
    >>> args = (x, h, weights, True, 1, 0.0, False, False, False)
    >>> tuple(call_fused_rnn(torch.gru, args, 15 * 9).shape)  # (T, B, units)
    (3, 2, 5)
    """
    import torch

    if (
        step_work >= OUTSIDE_GRAPH_FROM
        and torch.compiler.is_compiling()
        and torch.is_grad_enabled()
        and not _torch_private.dynamo_config().allow_rnn
    ):
        if current_torch_options().rnn_operator:
            inputs, hx, params = args[:3]
            kind = "lstm" if run is torch.lstm else "gru"
            states = list(hx) if kind == "lstm" else [hx]
            return fused_rnn(kind, inputs, states, params)
        return _OUTSIDE[0](run, *args)
    return _first_output(run, *args)
