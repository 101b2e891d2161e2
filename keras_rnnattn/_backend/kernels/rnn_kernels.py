"""The recurrence kernels: one GRU/LSTM step, the loop over time, the fused runs.

`gate_step` is the one step of Keras's GRU and LSTM in `keras.ops`, shared by
`AttentionDecoder` and `run_rnn`. The other functions choose by backend how a
recurrence is driven, which never changes a result: `ops.scan` or a Python loop
(`time_loop`), a stock Keras GRU/LSTM or PyTorch's fused kernel or a hoisted
input projection (`run_rnn`, `own_rnn_kernels`).
"""

import keras
from keras import ops

from keras_rnnattn._backend.kernels.fast_tanh import tanh_for
from keras_rnnattn._backend.kernels.fused_dense import linear
from keras_rnnattn._backend.kernels.torch_fused_rnn import call_fused_rnn


def loops_in_python():
    """Whether loops over time run as Python loops over `ops.unstack`.

    A driver choice by backend; it never changes a step. On torch, `ops.scan`
    indexes `xs[t]` at every step, and the backward pass of each index writes a
    zero tensor the size of the whole sequence; a loop over `ops.unstack`
    (torch's `unbind`) does not (an LSTM at batch 64, 30 steps, 512 units trained
    25% faster). On JAX and TensorFlow `ops.scan` is faster than an unrolled loop.
    """
    return keras.backend.backend() == "torch"


def own_rnn_kernels():
    """Whether the application models' GRU and LSTM layers run `run_rnn`'s kernels.

    A driver choice by backend; the outputs are the same. On torch, Keras's GRU
    and LSTM loop over the steps in Python on CPU, masked or not: there the
    layers of `layers/recurrent.py` run PyTorch's fused kernel through
    `run_rnn` instead, unmasked (a bidirectional one over each row reversed
    within its length). A train step of a bidirectional encoder over padded rows
    was 1.7-2.0x faster, of one direction 1.5-1.8x (`benchmarks/rnn_encoders.py`).
    On JAX and TensorFlow Keras's own layers were about as fast or faster.
    """
    return keras.backend.backend() == "torch"


def time_loop(fn, init, xs):
    """`ops.scan(fn, init, xs)`, or the same as a Python loop (`loops_in_python`).

    `xs` may be a nested structure of tensors, each with the steps on axis 0.
    `fn` returns `(carry, y)` with `y` the new carry itself (Keras's TensorFlow
    scan needs that). On TensorFlow the loop is `tf.scan`, whose while loop
    has its number of iterations set: XLA (`jit_compile=True`) can then
    differentiate it, which it cannot do for Keras's scan ("XLA compilation
    requires a fixed tensor list size").
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        ys = tf.scan(lambda carry, x_t: fn(carry, x_t)[0], xs, initializer=init)
        return keras.tree.map_structure(lambda y: y[-1], ys), ys
    if not loops_in_python():
        return ops.scan(fn, init, xs)
    carry, ys = init, []
    leaves = [ops.unstack(leaf, axis=0) for leaf in keras.tree.flatten(xs)]
    for step in zip(*leaves):
        carry, y = fn(carry, keras.tree.pack_sequence_as(xs, list(step)))
        ys.append(y)
    return carry, keras.tree.map_structure(lambda *y: ops.stack(y), *ys)


def gate_step(kind, cell, x, states, recurrent_kernel, recurrent_bias=None):
    """One step of Keras's GRU (reset_after) or LSTM from projected inputs `x`.

    Args:
        kind: `"gru"` or `"lstm"`.
        cell: the Keras cell, for its activations.
        x: `(B, G)`, the input part of the pre-activations, biases included.
        states: `[h]` or `[h, c]`.
        recurrent_kernel: `(units, G)`.
        recurrent_bias: `(G,)`, the GRU's recurrent bias.

    Returns:
        `(h, new_states)`.
    """
    h_prev = states[0]
    act = tanh_for(cell.activation)  # Eigen's tanh in compiled torch inference
    if kind == "gru":
        rec = linear(h_prev, recurrent_kernel, recurrent_bias)  # (B, 3 units)
        x_z, x_r, x_h = ops.split(x, 3, axis=-1)
        r_z, r_r, r_h = ops.split(rec, 3, axis=-1)
        z = cell.recurrent_activation(x_z + r_z)
        r = cell.recurrent_activation(x_r + r_r)
        candidate = act(x_h + r * r_h)
        h = z * h_prev + (1.0 - z) * candidate  # (B, units)
        return h, [h]
    gates = x + linear(h_prev, recurrent_kernel)  # (B, 4 units)
    i, f, g, o = ops.split(gates, 4, axis=-1)
    rec_act = cell.recurrent_activation
    c = rec_act(f) * states[1] + rec_act(i) * act(g)
    h = rec_act(o) * act(c)
    return h, [h, c]


def _gru_by_steps(kind, inputs, recurrent_kernel):
    """Torch: whether a GRU runs as its input projection for all steps, then
    `gate_step` at each, rather than `torch.gru`, whose CPU kernel multiplies in
    ATen (`torch.lstm`'s runs oneDNN's fused LSTM), in inference where `linear`
    sends the step's recurrent product to oneDNN. Eagerly, where the op
    measured oneDNN faster for its shape (a bidirectional GRU of 192 units over
    64 rows of 20 steps took 16.6 ms in `torch.gru` on an AMD EPYC core; the
    Ding preset translated 7-17% more sentences a second this way). Compiled,
    wherever the op runs (it chooses its library when called): Dynamo unrolls
    `torch.gru` into the graph as ATen products, a batched one for the inputs
    and one a step (`benchmarks/decode.py`'s 256-unit encoder over 64 rows of
    15 steps: 8.8 ms against 5.7 ms by steps, one CPU thread; the Ding
    preset's first greedy call on 64 sentences compiled in 19-20 s against
    10)."""
    import torch

    if kind != "gru":
        return False
    from keras_rnnattn._backend.kernels.onednn_linear import (
        measured_faster,
        uses_onednn,
    )

    if not uses_onednn(inputs[:, 0], recurrent_kernel):
        return False
    if torch.compiler.is_compiling():
        return True
    return measured_faster(inputs.shape[0], recurrent_kernel)


def rnn_kind(rnn):
    """`"gru"`/`"lstm"` for stock layers whose step `gate_step` reproduces."""
    if not isinstance(rnn, (keras.layers.GRU, keras.layers.LSTM)):
        return None  # any other cell (a stack, a user's cell) runs as it is
    cell = rnn.cell
    if cell.recurrent_dropout or not cell.use_bias:
        return None  # (input dropout is applied before the kernel: `run_rnn`)
    if (cell.activation, cell.recurrent_activation) != (
        keras.activations.tanh,
        keras.activations.sigmoid,
    ):
        return None  # the fused kernels have these two built in
    if isinstance(rnn, keras.layers.GRU):
        return "gru" if cell.reset_after else None
    return "lstm"


def run_rnn(rnn, inputs, initial_state=None, training=None):
    """The output sequence `(B, T, units)` of a Keras RNN layer over `inputs`.

    The one place that picks a recurrence kernel by backend, for a stock GRU
    (reset_after) or LSTM without recurrent dropout, with the layer's own weights
    (measured on CPU; see benchmarks/RESULTS.md):

    - torch: PyTorch's fused kernel (`torch.lstm` / `torch.gru`, oneDNN on CPU,
      cuDNN on GPU); Keras uses the same call on GPU only, and its CPU fallback
      indexes `x[t]` per step, whose backward pass writes a full-size zero tensor
      each time; a large layer trained under `torch.compile` calls it at a graph
      break, as PyTorch's `nn.LSTM` does (`torch_fused_rnn`); in inference on
      the CPU a GRU may run its steps through oneDNN instead (`_gru_by_steps`);
    - TensorFlow: the input projection for all steps at once, then `time_loop`
      (`tf.scan`) of the recurrent part (the stock layer projects inside the
      loop); in training an LSTM runs `tf_lstm.lstm_sequence` and a GRU
      `tf_gru.gru_sequence`, the same loop with `jax_lstm`'s kind of backward
      pass (a layer's forward and backward 13-15% and 17-20% faster on an AMD
      EPYC core); inference and export keep the plain loop;
    - JAX: for an LSTM, `jax_lstm.lstm_sequence`, the input projection for all
      steps at once and the recurrence, whose backward pass computes the
      weights' gradients once after the loop (a fast/big train step of
      `benchmarks/seq2seq_train.py` 6-10% faster, and 35 ms a layer less with
      the projection inside); for a GRU, the layer itself
      (XLA's scan of the stock cell was as fast as a hoisted one);
    - every other layer: the layer itself.

    It always runs forward in time: a layer made with `go_backwards=True` (the
    backward half of a `keras.layers.Bidirectional`) reads `inputs` from the
    first step to the last all the same, and the outputs are in that order.
    """
    kind = rnn_kind(rnn)
    backend = keras.backend.backend()
    own_kernel = backend in ("torch", "tensorflow") or (
        backend == "jax" and kind == "lstm"
    )
    if kind is None or not own_kernel:
        if rnn.go_backwards:
            # It reads the flipped steps from the last: the inputs in order.
            inputs = ops.flip(inputs, axis=1)
        out = rnn(inputs, initial_state=initial_state, training=training)
        return out[0] if isinstance(out, (list, tuple)) else out
    cell = rnn.cell
    if training and cell.dropout:
        # Input dropout outside the fused kernel, as Keras's cuDNN path does:
        # the cell's one mask per row, the same at every step.
        cell.reset_dropout_mask()  # a mask a call of the layer left, if any
        mask = cell.get_dropout_mask(inputs[:, 0, :])  # (B, input_dim)
        cell.reset_dropout_mask()
        inputs = inputs * ops.expand_dims(ops.cast(mask, inputs.dtype), 1)
    dtype = inputs.dtype
    kernel = ops.cast(cell.kernel, dtype)  # (input_dim, G)
    recurrent_kernel = ops.cast(cell.recurrent_kernel, dtype)  # (units, G)
    bias = ops.cast(cell.bias, dtype)
    if initial_state is None:
        zeros = ops.zeros((ops.shape(inputs)[0], cell.units), dtype=dtype)
        states = [zeros] * (2 if kind == "lstm" else 1)
    else:
        states = [ops.cast(state, dtype) for state in initial_state]
    if backend == "torch" and not _gru_by_steps(kind, inputs, recurrent_kernel):
        import torch

        def gates(w):  # Keras's gate blocks in PyTorch's order, transposed
            z, r, h = torch.chunk(w, 3, dim=-1)
            return torch.cat([r, z, h], dim=-1) if kind == "gru" else w

        if kind == "lstm":
            params = [kernel.T, recurrent_kernel.T, bias, torch.zeros_like(bias)]
            hx = (states[0][None], states[1][None])
            run = torch.lstm
        else:
            params = [gates(kernel).T, gates(recurrent_kernel).T]
            params += [gates(bias[0]), gates(bias[1])]
            hx = states[0][None]
            run = torch.gru
        params = [p.contiguous() for p in params]
        args = (inputs, hx, params, True, 1, 0.0, bool(training), False, True)
        # Gates x (inputs + units) multiply-adds per row and step.
        work = int(kernel.shape[1]) * (int(kernel.shape[0]) + cell.units)
        return call_fused_rnn(run, args, work)
    inputs = ops.transpose(inputs, (1, 0, 2))  # (T, B, input_dim): the narrower
    if backend == "jax":
        from keras_rnnattn._backend.kernels.jax_lstm import lstm_sequence

        hs = lstm_sequence(inputs, kernel, bias, recurrent_kernel, *states)
        return ops.transpose(hs, (1, 0, 2))  # (B, T, units)
    if kind == "lstm" and training:
        from keras_rnnattn._backend.kernels.tf_lstm import lstm_sequence

        hs = lstm_sequence(inputs, kernel, bias, recurrent_kernel, *states)
        return ops.transpose(hs, (1, 0, 2))  # (B, T, units)
    bias_in, bias_rec = (bias[0], bias[1]) if kind == "gru" else (bias, None)
    if kind == "gru" and training:
        from keras_rnnattn._backend.kernels.tf_gru import gru_sequence

        hs = gru_sequence(inputs, kernel, bias_in, recurrent_kernel, bias_rec, *states)
        return ops.transpose(hs, (1, 0, 2))  # (B, T, units)
    x = linear(inputs, kernel, bias_in)  # (T, B, G): all steps at once

    def body(carry, x_t):
        h, new_states = gate_step(
            kind, cell, x_t, list(carry), recurrent_kernel, bias_rec
        )
        return tuple(new_states), tuple(new_states)

    _, history = time_loop(body, tuple(states), x)
    return ops.transpose(history[0], (1, 0, 2))  # h for every step
