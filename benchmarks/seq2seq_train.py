"""Translator training speed per Keras backend beside plain PyTorch and TensorFlow.

One process per Keras backend (TensorFlow, JAX, PyTorch). Each builds the
Translator, a plain PyTorch model and a plain TensorFlow model of the same
architecture and parameter count (checked), and times them in alternating
windows of train steps after a warm-up window; the median window of each counts.
The ratios are therefore measured side by side, in the same process and the same
minute, which matters on a shared machine. With `--check-loss N` (on in
`--quick`) the peers first get the Translator's weights and train N steps on one
batch: the three first losses must agree (the same forward pass), plain TF's
losses must agree with the Translator's at every step (the same Adam), and every
loss must fall. Three runs:

- `fast/big`: LSTM encoder and decoder, Luong dot attention, no input feeding (the
  decoder's fast path: the recurrence over all target steps, then attention for
  all steps at once), batch 64, length 30, vocabulary 8k, embedding 256, 512
  units; against `nn.LSTM` (oneDNN's fused kernel) + `bmm` attention, and a
  `tf.function` with the input projection for all steps, then `tf.scan` of the
  recurrent part (`--tf-lstm block`: `tf.raw_ops.BlockLSTMV2`, TF's fused LSTM
  kernel, with `BlockLSTMGradV2` as its gradient since TF 2.21 registers a wrong
  one; about 1.6x slower per train step on one thread).
- `feeding/big` and `feeding/small`: GRU, Bahdanau attention with the previous
  state as query and the context fed to the cell (the step path); against a
  decoder that loops over the steps in Python (the design of the PyTorch seq2seq
  tutorial, with `nn.GRUCell` and the keys projected once), and the same loop in
  TensorFlow (unrolled over the static number of steps inside `tf.function`, the
  GRU cell written in tf ops, the encoder a `tf.scan`). Small is the tutorial's
  size: batch 32, length 10, vocabulary 4k, 128 units.

All three: the same bridge (tanh(W h_enc)) and readout (tanh(W_c [c; h])), Adam,
global gradient-norm clipping at 5, a cross-entropy that ignores pad id 0, and
no metric. The plain TensorFlow model uses no Keras: `tf.Variable` weights,
`tf.nn` ops, `tf.clip_by_global_norm`, `tf.raw_ops.ResourceApplyAdam`. Every
library is pinned to `--threads` threads (default 1). The torch backend runs
twice: eagerly (Keras's default there) and with `compile(jit_compile=True)`,
Keras's `torch.compile` of the train step (`--eager-only` skips that run).

Share of the matmul ceiling. Each worker measures float32 GFLOP/s of a square
`--matmul-size` product (default 2048; median of 5) with the Keras backend's own
matmul and with `torch.matmul` and `tf.matmul`, and divides the achieved GFLOP/s
of the best window by the ceiling of the library that ran it. The FLOPs of a
train step are counted as 3x the forward matmul FLOPs (a backward pass costs
about two forwards), without embeddings and element-wise work; a matmul
(m, k) @ (k, n) counts 2mkn. With B the batch, S = T the length, E the embedding,
U the units, V the vocabulary, the forward matmul FLOPs are

- fast:    2B [S(E+U)4U + T(E+U)4U + 2U² + 2TSU + T·2U·U + TUV]
  (encoder LSTM, decoder LSTM, two bridges, scores and context, W_c, output);
- feeding: 2B [S(E+U)3U + U² + SU² + T(U² + 2SU + (E+2U)3U + 2U² + UV)]
  (encoder GRU, bridge, keys; per step the query, scores and context, the GRU
  cell on [y; c] and h, W_c, output).

    python benchmarks/seq2seq_train.py              # all runs, the full tables
    python benchmarks/seq2seq_train.py --runs fast/big --backends jax
    python benchmarks/seq2seq_train.py --quick      # smoke run (JAX, ~1 min), checks
"""

import argparse
import json
import time

from _common import add_worker_arguments, log, median, pin_threads, run_worker

SIZES = {
    "big": dict(batch=64, length=30, vocab=8000, embedding=256, units=512),
    "small": dict(batch=32, length=10, vocab=4000, embedding=128, units=128),
}
CONFIGS = {
    "fast": dict(cell="lstm", attention="luong_dot", input_feeding=False),
    "feeding": dict(cell="gru", attention="bahdanau", input_feeding=True),
}
RUNS = ("fast/big", "feeding/big", "feeding/small")
BACKENDS = ("tensorflow", "jax", "torch")
# The row of the torch backend with `compile(jit_compile=True)`.
JIT_ROW = "torch, jit_compile=True"
PEERS = ("keras", "pytorch", "tensorflow")


def fake_data(size, steps, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (size["batch"] * steps, size["length"])
    # Ids 4.. are words: no padding, no special tokens.
    return tuple(rng.integers(4, size["vocab"], shape).astype("int32") for _ in "abc")


def train_flops(config, size):
    """Matmul FLOPs of one train step: 3x the forward pass (see the docstring)."""
    B, L, V = size["batch"], size["length"], size["vocab"]
    E, U = size["embedding"], size["units"]
    S = T = L
    if config["cell"] == "lstm":
        forward = (
            S * (E + U) * 4 * U  # encoder LSTM
            + T * (E + U) * 4 * U  # decoder LSTM
            + 2 * U * U  # bridges of h and c
            + 2 * T * S * U  # scores and context
            + T * 2 * U * U  # W_c [c; h]
            + T * U * V  # output layer
        )
    else:
        forward = (
            S * (E + U) * 3 * U  # encoder GRU
            + U * U  # bridge
            + S * U * U  # keys, once
            + T
            * (
                U * U  # query
                + 2 * S * U  # scores (vᵀ tanh) and context
                + (E + U + U) * 3 * U  # GRU cell on [y; c] and on h
                + 2 * U * U  # W_c [c; h]
                + U * V  # output layer
            )
        )
    return 3 * 2 * B * forward


class Trainer:
    """`train()` runs a window of steps; `step_on_first_batch()` returns a loss."""

    def __init__(self, train, step_on_first_batch, params, model=None):
        self.train = train
        self.step_on_first_batch = step_on_first_batch
        self.params = params
        self.model = model  # the model or, for plain TF, its dict of variables


def fit_inputs(x, y, batch_size):
    """The keyword arguments of `fit` that feed the batches in order.

    NumPy arrays on JAX and PyTorch. On TensorFlow a `tf.data.Dataset` of the
    same batches with one private thread and no autotuning: Keras turns NumPy
    input into a pipeline with a parallel map and a prefetch sized by
    `AUTOTUNE`, and on one pinned core that pipeline made the train step take
    twice as long (1.71 s against 0.86 s at fast/big), with the core idle half
    of the time, in some windows and not others (see README.md).
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return dict(x=x, y=y, batch_size=batch_size)
    import tensorflow as tf

    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.autotune.enabled = False
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)
    return dict(x=dataset.with_options(options))


def keras_trainer(config, size, steps, jit_compile="auto"):
    """The Translator, trained with `fit` (compiled; on torch eagerly unless
    `jit_compile=True`, Keras's `torch.compile` of the train step)."""
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import WordTokenizer

    keras.utils.set_random_seed(0)
    words = " ".join(f"w{i}" for i in range(size["vocab"] - 4))
    tokenizer = WordTokenizer().fit([words])
    if tokenizer.vocabulary_size != size["vocab"]:
        raise ValueError(
            f"Expected a vocabulary of {size['vocab']}. "
            f"Received: vocabulary_size={tokenizer.vocabulary_size}"
        )
    model = Translator(
        tokenizer,
        tokenizer,
        embedding_dim=size["embedding"],
        units=size["units"],
        bidirectional=False,
        **config,
    )
    model.compile(metrics=[], jit_compile=jit_compile)
    source, target_in, target_out = fake_data(size, steps)
    b = size["batch"]
    inputs = fit_inputs((source, target_in), target_out, b)

    def train():
        model.fit(**inputs, shuffle=False, verbose=0)

    def step_on_first_batch():
        loss = model.train_on_batch((source[:b], target_in[:b]), target_out[:b])
        return float(loss[0] if isinstance(loss, (list, tuple)) else loss)

    return Trainer(train, step_on_first_batch, model.count_params(), model)


def pytorch_trainer(config, size, steps, device="cpu"):
    """The plain PyTorch model (eager, `torch.optim.Adam`) on `device`."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    V, E, U = size["vocab"], size["embedding"], size["units"]

    class LuongLSTM(nn.Module):
        """Encoder LSTM, decoder LSTM, dot attention for all steps with bmm."""

        def __init__(self):
            super().__init__()
            self.source_embedding = nn.Embedding(V, E)
            self.target_embedding = nn.Embedding(V, E)
            self.encoder = nn.LSTM(E, U, batch_first=True)
            self.decoder = nn.LSTM(E, U, batch_first=True)
            for lstm in (self.encoder, self.decoder):
                # One bias per gate, as Keras's LSTM (PyTorch's has two).
                nn.init.zeros_(lstm.bias_hh_l0)
                lstm.bias_hh_l0.requires_grad_(False)
            self.bridge_h, self.bridge_c = nn.Linear(U, U), nn.Linear(U, U)
            self.attention_dense = nn.Linear(2 * U, U, bias=False)
            self.out = nn.Linear(U, V)

        def forward(self, source, target_in):
            memory, _ = self.encoder(self.source_embedding(source))  # (B, S, U)
            last = memory[:, -1]
            h0 = torch.tanh(self.bridge_h(last))[None]
            c0 = torch.tanh(self.bridge_c(last))[None]
            h, _ = self.decoder(self.target_embedding(target_in), (h0, c0))
            scores = torch.bmm(h, memory.transpose(1, 2))  # (B, T, S)
            scores = scores.masked_fill((source == 0)[:, None], float("-inf"))
            context = torch.bmm(torch.softmax(scores, -1), memory)
            o = torch.tanh(self.attention_dense(torch.cat([context, h], -1)))
            return self.out(o)

    class BahdanauLoop(nn.Module):
        """The tutorial's decoder: a Python loop of attention, GRU cell, output."""

        def __init__(self):
            super().__init__()
            self.source_embedding = nn.Embedding(V, E)
            self.target_embedding = nn.Embedding(V, E)
            self.encoder = nn.GRU(E, U, batch_first=True)
            self.bridge = nn.Linear(U, U)
            self.w_query = nn.Linear(U, U, bias=False)
            self.w_key = nn.Linear(U, U, bias=False)
            self.b = nn.Parameter(torch.zeros(U))
            self.v = nn.Parameter(torch.randn(U) / U**0.5)
            self.cell = nn.GRUCell(E + U, U)
            self.attention_dense = nn.Linear(2 * U, U, bias=False)
            self.out = nn.Linear(U, V)

        def forward(self, source, target_in):
            memory, _ = self.encoder(self.source_embedding(source))  # (B, S, U)
            keys = self.w_key(memory)  # once per batch
            pad = source == 0
            s = torch.tanh(self.bridge(memory[:, -1]))
            embedded = self.target_embedding(target_in)
            logits = []
            for t in range(target_in.shape[1]):
                hidden = torch.tanh(self.w_query(s)[:, None] + keys + self.b)
                scores = (hidden @ self.v).masked_fill(pad, float("-inf"))  # (B, S)
                weights = torch.softmax(scores, -1)
                context = torch.bmm(weights[:, None], memory)[:, 0]  # (B, U)
                s = self.cell(torch.cat([embedded[:, t], context], -1), s)
                o = torch.tanh(self.attention_dense(torch.cat([context, s], -1)))
                logits.append(self.out(o))
            return torch.stack(logits, 1)

    model = (LuongLSTM() if config["cell"] == "lstm" else BahdanauLoop()).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=1e-3)
    data = [torch.from_numpy(a).long().to(device) for a in fake_data(size, steps)]
    b = size["batch"]

    def step(i):
        source, target_in, target_out = (a[i * b : (i + 1) * b] for a in data)
        optimizer.zero_grad()
        logits = model(source, target_in)
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, V), target_out.reshape(-1), ignore_index=0
        )
        loss.backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        optimizer.step()
        return loss.detach()

    def train():
        for i in range(steps):
            loss = step(i)
        float(loss)  # waits for the device, as Keras's `fit` does at its end

    return Trainer(train, lambda: float(step(0)), sum(p.numel() for p in params), model)


def tensorflow_trainer(config, size, steps, lstm_kernel="scan"):
    """The plain TensorFlow model: `tf.Variable`s and tf ops in a `tf.function`."""
    import numpy as np
    import tensorflow as tf

    V, E, U = size["vocab"], size["embedding"], size["units"]
    B = size["batch"]
    rng = np.random.default_rng(0)
    w = {}

    def add(name, shape, init="glorot"):
        if init == "zeros":
            value = np.zeros(shape, "float32")
        else:
            limit = 0.05 if init == "embedding" else np.sqrt(6 / sum(shape[-2:]))
            value = rng.uniform(-limit, limit, shape).astype("float32")
        w[name] = tf.Variable(value, name=name.replace("/", "_"))

    def add_dense(name, fan_in, fan_out, bias=True):
        add(f"{name}/kernel", (fan_in, fan_out))
        if bias:
            add(f"{name}/bias", (fan_out,), "zeros")

    def dense(x, name):
        """x @ W (+ b) on the last axis, as one 2-D matmul."""
        kernel = w[f"{name}/kernel"]
        y = tf.matmul(tf.reshape(x, (-1, x.shape[-1])), kernel)
        y = tf.reshape(y, (*x.shape[:-1], kernel.shape[-1]))
        return y + w[f"{name}/bias"] if f"{name}/bias" in w else y

    add("source_embedding", (V, E), "embedding")
    add("target_embedding", (V, E), "embedding")
    gates = 4 if config["cell"] == "lstm" else 3
    for name, width in (("encoder", E), ("decoder", E if gates == 4 else E + U)):
        add(f"{name}/kernel", (width, gates * U))  # Keras's layout: gate blocks
        add(f"{name}/recurrent_kernel", (U, gates * U))
        # LSTM: one bias; GRU (reset_after): input and recurrent biases.
        add(f"{name}/bias", (gates * U,) if gates == 4 else (2, gates * U), "zeros")
    if gates == 4:
        add_dense("bridge_h", U, U)
        add_dense("bridge_c", U, U)
    else:
        add_dense("bridge", U, U)
        add_dense("query", U, U, bias=False)
        add_dense("key", U, U, bias=False)
        add("attention_b", (U,), "zeros")
        add("attention_v", (1, U))
    add_dense("attention_dense", 2 * U, U, bias=False)
    add_dense("out", U, V)

    def project(x, name):
        """The input part of a recurrence for all steps, time-major: (L, B, G)."""
        steps_first = tf.transpose(x, (1, 0, 2))  # (L, B, in)
        flat = tf.reshape(steps_first, (-1, x.shape[-1]))
        bias = w[f"{name}/bias"]
        bias = bias if gates == 4 else bias[0]
        projected = tf.matmul(flat, w[f"{name}/kernel"]) + bias
        return tf.reshape(projected, (x.shape[1], -1, gates * U))

    @tf.custom_gradient
    def block_lstm(x, h, c, kernel, bias):
        """`BlockLSTMV2` (gate blocks i, f, c, o, as Keras's) over x (L, B, E).

        With its gradient from `BlockLSTMGradV2`: TF 2.21 registers the V1
        gradient (`BlockLSTMGrad`, gate blocks i, c, f, o) for BlockLSTMV2,
        which gives wrong gradients.
        """
        zeros = tf.zeros((U,))
        common = dict(
            seq_len_max=tf.constant(x.shape[0], tf.int64),
            x=x,
            cs_prev=c,
            h_prev=h,
            w=kernel,  # (E + U, 4U)
            wci=zeros,
            wcf=zeros,
            wco=zeros,
            b=bias,
            use_peephole=False,
        )
        outputs = tf.raw_ops.BlockLSTMV2(cell_clip=0.0, **common)  # 0: no clip
        gate_i, cs, gate_f, gate_o, ci, co, hs = outputs  # each (L, B, U)

        def grad(dhs):
            g = tf.raw_ops.BlockLSTMGradV2(
                i=gate_i,
                cs=cs,
                f=gate_f,
                o=gate_o,
                ci=ci,
                co=co,
                h=hs,
                cs_grad=tf.zeros_like(cs),
                h_grad=dhs,
                **common,
            )
            return g.x_grad, g.h_prev_grad, g.cs_prev_grad, g.w_grad, g.b_grad

        return hs, grad

    def lstm(x, h, c, name):
        """An LSTM over `x` (B, L, E) from (h, c): the outputs (B, L, U)."""
        if lstm_kernel == "block":
            kernel = tf.concat([w[f"{name}/kernel"], w[f"{name}/recurrent_kernel"]], 0)
            bias = tf.convert_to_tensor(w[f"{name}/bias"])
            hs = block_lstm(tf.transpose(x, (1, 0, 2)), h, c, kernel, bias)
            return tf.transpose(hs, (1, 0, 2))  # (B, L, U)
        recurrent_kernel = w[f"{name}/recurrent_kernel"]

        def step(carry, x_t):
            h, c = carry
            gate_i, gate_f, gate_g, gate_o = tf.split(
                x_t + tf.matmul(h, recurrent_kernel), 4, axis=-1
            )
            c = tf.sigmoid(gate_f) * c + tf.sigmoid(gate_i) * tf.tanh(gate_g)
            return tf.sigmoid(gate_o) * tf.tanh(c), c

        hs, _ = tf.scan(step, project(x, name), initializer=(h, c))
        return tf.transpose(hs, (1, 0, 2))  # (B, L, U)

    def gru_cell(x, h, name):
        """Keras's GRU step (reset_after) from the projected input x (B, 3U)."""
        rec = tf.matmul(h, w[f"{name}/recurrent_kernel"]) + w[f"{name}/bias"][1]
        x_z, x_r, x_h = tf.split(x, 3, axis=-1)
        r_z, r_r, r_h = tf.split(rec, 3, axis=-1)
        z, r = tf.sigmoid(x_z + r_z), tf.sigmoid(x_r + r_r)
        return z * h + (1.0 - z) * tf.tanh(x_h + r * r_h)

    def forward_fast(source, target_in):
        zeros = tf.zeros((B, U))
        memory = lstm(tf.gather(w["source_embedding"], source), zeros, zeros, "encoder")
        last = memory[:, -1]
        h0 = tf.tanh(dense(last, "bridge_h"))
        c0 = tf.tanh(dense(last, "bridge_c"))
        h = lstm(tf.gather(w["target_embedding"], target_in), h0, c0, "decoder")
        scores = tf.matmul(h, memory, transpose_b=True)  # (B, T, S)
        scores = tf.where((source == 0)[:, None], -1e9, scores)
        context = tf.matmul(tf.nn.softmax(scores), memory)  # (B, T, U)
        o = tf.tanh(dense(tf.concat([context, h], -1), "attention_dense"))
        return dense(tf.reshape(o, (-1, U)), "out")  # (B T, V)

    def forward_feeding(source, target_in):
        def encoder_step(h, x_t):
            return gru_cell(x_t, h, "encoder")

        embedded = tf.gather(w["source_embedding"], source)
        hs = tf.scan(encoder_step, project(embedded, "encoder"), tf.zeros((B, U)))
        memory = tf.transpose(hs, (1, 0, 2))  # (B, S, U)
        keys = dense(memory, "key")  # once per batch, (B, S, U)
        pad = source == 0
        s = tf.tanh(dense(memory[:, -1], "bridge"))
        embedded = tf.gather(w["target_embedding"], target_in)  # (B, T, E)
        logits = []
        for t in range(target_in.shape[1]):
            query = dense(s, "query")[:, None] + w["attention_b"]  # (B, 1, U)
            hidden = tf.tanh(query + keys)  # (B, S, U)
            scores = tf.reduce_sum(hidden * w["attention_v"], -1)  # (B, S)
            weights = tf.nn.softmax(tf.where(pad, -1e9, scores))
            context = tf.matmul(weights[:, None], memory)[:, 0]  # (B, U)
            x = tf.concat([embedded[:, t], context], -1)  # (B, E + U)
            x = tf.matmul(x, w["decoder/kernel"]) + w["decoder/bias"][0]
            s = gru_cell(x, s, "decoder")
            o = tf.tanh(dense(tf.concat([context, s], -1), "attention_dense"))
            logits.append(dense(o, "out"))  # (B, V)
        return tf.reshape(tf.stack(logits, 1), (-1, V))  # (B T, V)

    forward = forward_fast if gates == 4 else forward_feeding
    variables = list(w.values())
    slots = [
        (tf.Variable(tf.zeros_like(v)), tf.Variable(tf.zeros_like(v)))
        for v in variables
    ]
    iteration = tf.Variable(0.0)
    lr, beta1, beta2, epsilon = 1e-3, 0.9, 0.999, 1e-7

    @tf.function
    def train_step(source, target_in, target_out):
        with tf.GradientTape() as tape:
            logits = forward(source, target_in)  # (B T, V)
            labels = tf.reshape(target_out, (-1,))
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
            real = tf.cast(labels != 0, loss.dtype)
            loss = tf.reduce_sum(loss * real) / tf.maximum(tf.reduce_sum(real), 1.0)
        # Embedding gradients arrive as IndexedSlices; Adam updates dense rows.
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        grads, _ = tf.clip_by_global_norm(grads, 5.0)
        t = iteration.assign_add(1.0)
        for var, (m, v), grad in zip(variables, slots, grads):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle,
                m=m.handle,
                v=v.handle,
                beta1_power=beta1**t,
                beta2_power=beta2**t,
                lr=lr,
                beta1=beta1,
                beta2=beta2,
                epsilon=epsilon,
                grad=grad,
            )
        return loss

    batches = [
        tuple(tf.constant(a[i * B : (i + 1) * B]) for a in fake_data(size, steps))
        for i in range(steps)
    ]

    def train():
        for batch in batches:
            train_step(*batch)

    params = sum(int(np.prod(v.shape)) for v in variables)
    return Trainer(train, lambda: float(train_step(*batches[0])), params, w)


def matmul_gflops(library, n, repeats):
    """Float32 GFLOP/s of an (n, n) @ (n, n) product with `library`'s own matmul."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in "ab")
    if library == "torch":
        import torch

        x, y = torch.from_numpy(a), torch.from_numpy(b)

        def product():
            torch.matmul(x, y)

    elif library == "tensorflow":
        import tensorflow as tf

        x, y = tf.constant(a), tf.constant(b)

        def product():
            tf.matmul(x, y)  # eager ops on CPU return when done

    else:
        import jax
        import jax.numpy as jnp

        x, y, matmul = jnp.asarray(a), jnp.asarray(b), jax.jit(jnp.matmul)

        def product():
            matmul(x, y).block_until_ready()

    product()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        product()
        times.append(time.perf_counter() - start)
    return 2 * n**3 / median(times) / 1e9


def share_weights(trainers, config):
    """Copies the Translator's weights into the plain PyTorch and TF models."""
    model = trainers["keras"].model
    copy_to_tensorflow(model, trainers["tensorflow"].model, config)
    copy_to_pytorch(model, trainers["pytorch"].model, config)


def keras_weights(model):
    """The Translator's weights as NumPy arrays by path (without the model's name)."""
    import keras

    return {
        v.path.split("/", 1)[1]: keras.ops.convert_to_numpy(v) for v in model.weights
    }


def _gru_gates(lstm):
    """Keras's GRU gate blocks (z, r, h) in PyTorch's order (r, z, n), last axis."""
    import numpy as np

    def gates(a):
        if lstm:
            return a
        z, r, h = np.split(a, 3, axis=-1)
        return np.concatenate([r, z, h], axis=-1)

    return gates


def copy_to_tensorflow(model, tf_vars, config):
    """Copies the Translator's weights into the plain TF model's variables."""
    k = keras_weights(model)
    lstm = config["cell"] == "lstm"
    cell = "lstm_cell" if lstm else "gru_cell"
    names = {  # plain TF name: Keras path
        "source_embedding": "source_embedding/embeddings",
        "target_embedding": "target_embedding/embeddings",
        "attention_dense/kernel": "decoder/attention_dense/kernel",
        "out/kernel": "output_dense/kernel",
        "out/bias": "output_dense/bias",
    }
    for ours, theirs in (("encoder", "encoder_forward_0"), ("decoder", "decoder/rnn")):
        for part in ("kernel", "recurrent_kernel", "bias"):
            names[f"{ours}/{part}"] = f"{theirs}/{cell}/{part}"
    bridges = ("bridge_h", "bridge_c") if lstm else ("bridge",)
    for i, bridge in enumerate(bridges):
        names[f"{bridge}/kernel"] = f"bridge_{i}/kernel"
        names[f"{bridge}/bias"] = f"bridge_{i}/bias"
    if not lstm:
        names["query/kernel"] = "decoder/attention/query_dense/kernel"
        names["key/kernel"] = "decoder/attention/key_dense/kernel"
        names["attention_v"] = "decoder/attention/v"
        names["attention_b"] = "decoder/attention/b"
    for ours, theirs in names.items():
        tf_vars[ours].assign(k[theirs].reshape(tf_vars[ours].shape))


def copy_to_pytorch(model, torch_model, config):
    """Copies the Translator's weights into the plain PyTorch model.

    Keras keeps kernels as (in, out) and GRU gates in the order z, r, h;
    PyTorch keeps weights as (out, in) and GRU gates in the order r, z, n.
    """
    import numpy as np
    import torch

    k = keras_weights(model)
    lstm = config["cell"] == "lstm"
    cell = "lstm_cell" if lstm else "gru_cell"
    gates = _gru_gates(lstm)

    def kernel(path):
        return k[path].T

    m = torch_model
    values = {
        m.source_embedding.weight: k["source_embedding/embeddings"],
        m.target_embedding.weight: k["target_embedding/embeddings"],
        m.attention_dense.weight: kernel("decoder/attention_dense/kernel"),
        m.out.weight: kernel("output_dense/kernel"),
        m.out.bias: k["output_dense/bias"],
    }
    decoder = m.decoder if lstm else m.cell
    for rnn, path in ((m.encoder, "encoder_forward_0"), (decoder, "decoder/rnn")):
        suffix = "_l0" if isinstance(rnn, torch.nn.RNNBase) else ""
        bias = k[f"{path}/{cell}/bias"]
        values[getattr(rnn, "weight_ih" + suffix)] = gates(k[f"{path}/{cell}/kernel"]).T
        values[getattr(rnn, "weight_hh" + suffix)] = gates(
            k[f"{path}/{cell}/recurrent_kernel"]
        ).T
        values[getattr(rnn, "bias_ih" + suffix)] = gates(bias if lstm else bias[0])
        values[getattr(rnn, "bias_hh" + suffix)] = (
            np.zeros_like(bias) if lstm else gates(bias[1])
        )
    linears = (m.bridge_h, m.bridge_c) if lstm else (m.bridge,)
    for i, linear in enumerate(linears):
        values[linear.weight] = kernel(f"bridge_{i}/kernel")
        values[linear.bias] = k[f"bridge_{i}/bias"]
    if not lstm:
        values[m.w_query.weight] = kernel("decoder/attention/query_dense/kernel")
        values[m.w_key.weight] = kernel("decoder/attention/key_dense/kernel")
        values[m.v] = k["decoder/attention/v"]
        values[m.b] = k["decoder/attention/b"]
    with torch.no_grad():
        for parameter, value in values.items():
            parameter.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    if len(values) != len(list(m.parameters())):
        raise ValueError(
            f"Copied {len(values)} of the {len(list(m.parameters()))} PyTorch "
            "parameters: the weight map misses some."
        )


def worker(args):
    pin_threads(args.threads)
    import keras
    import numpy as np

    config_name, size_name = args.run.split("/")
    config, size = CONFIGS[config_name], SIZES[size_name]
    trainers = {
        "keras": keras_trainer(
            config, size, args.steps, True if args.jit_compile else "auto"
        ),
        "pytorch": pytorch_trainer(config, size, args.steps),
        "tensorflow": tensorflow_trainer(config, size, args.steps, args.tf_lstm),
    }
    params = {name: trainer.params for name, trainer in trainers.items()}
    if len(set(params.values())) != 1:
        raise ValueError(
            "The three models must have the same number of parameters. "
            f"Received: {params}"
        )
    if args.check_loss:
        # From the Translator's weights, a few steps on one repeated batch. The
        # first loss (the forward pass) must agree for the three models; plain TF
        # updates as Keras's Adam does, so its losses must agree at every step
        # (PyTorch's Adam puts epsilon elsewhere: its losses drift a little);
        # and every model's loss must fall.
        share_weights(trainers, config)
        losses = {
            name: [trainer.step_on_first_batch() for _ in range(args.check_loss)]
            for name, trainer in trainers.items()
        }
        first = [values[0] for values in losses.values()]
        same = np.allclose(first, first[0], rtol=0, atol=1e-4) and np.allclose(
            losses["tensorflow"], losses["keras"], rtol=0, atol=2e-3
        )
        falling = all(values[-1] < values[0] for values in losses.values())
        if not same or not falling:
            raise ValueError(
                "Expected the same first loss from the same weights, the same "
                f"losses for Keras and plain TF, and falling losses. Received: {losses}"
            )
    seconds = {name: [] for name in trainers}
    for window in range(args.windows + 1):  # the first window compiles, warms up
        for name, trainer in trainers.items():
            start = time.perf_counter()
            trainer.train()
            if window:
                seconds[name].append(time.perf_counter() - start)
    result = {
        "tokens": args.steps * size["batch"] * size["length"],
        "steps": args.steps,
        "seconds": seconds,
        "flops": train_flops(config, size),
        "params": params,
        "backend": keras.backend.backend(),
    }
    libraries = ["torch", "tensorflow"] + ["jax"] * (keras.backend.backend() == "jax")
    result["ceiling"] = {
        library: matmul_gflops(library, args.matmul_size, 5) for library in libraries
    }
    if args.check_loss:
        result["losses"] = losses
    print(json.dumps(result))


def fmt_ratio(value):
    return f"{value:.2f}x"


def report(results, args):
    """The markdown section: the speed table, the ceiling table, the targets."""
    print("## Seq2seq training speed (`benchmarks/seq2seq_train.py`)\n")
    steps = ", ".join(f"{run} {args.steps_of[run]}" for run in results)
    print(
        f"Target tokens/s of a train step (Adam, global gradient clipping at 5, "
        f"masked cross-entropy, no metric) of the `Translator` (`fit` on NumPy "
        f"arrays; on TensorFlow on a `tf.data.Dataset` with one private thread "
        f"and no autotuning, see README.md), a plain "
        f"PyTorch model and a plain TensorFlow model (`tf.function`, no Keras) of "
        f"the same architecture and parameter count, trained in one process per "
        f"Keras backend in alternating windows: {args.windows} timed windows "
        f"after a warm-up window, train steps per window: {steps}. Every library "
        f"pinned to {args.threads} thread(s). Numbers are the median window; the "
        f"ratios divide medians of the same process. `fast/big`: LSTM, Luong dot "
        f"attention, no input feeding (the fast path), batch 64, length 30, "
        f"vocabulary 8k, embedding 256, 512 units. `feeding/*`: GRU, Bahdanau "
        f"attention, context fed to the cell (the step path), against decoders "
        f"that loop over the steps; small is batch 32, length 10, vocabulary 4k, "
        f"embedding and units 128. `{JIT_ROW}`: the torch backend again, the "
        f"Translator compiled with `jit_compile=True` (Keras runs its train step "
        f"through `torch.compile`; the warm-up window holds the compilation)."
        + (" Smoke run (`--quick`): too few steps to trust." if args.quick else "")
        + "\n"
    )
    print(
        "| run | Keras backend | Translator | plain PyTorch | plain TF "
        "| Translator / PyTorch | Translator / TF |"
    )
    print("|---|---|---|---|---|---|---|")
    medians = {}
    for run, by_backend in results.items():
        for backend, r in by_backend.items():
            if r is None:
                print(f"| {run} | {backend} | failed | | | | |")
                continue
            speed = {k: r["tokens"] / median(v) for k, v in r["seconds"].items()}
            medians[run, backend] = speed
            print(
                f"| {run} | {backend} | {speed['keras']:,.0f} "
                f"| {speed['pytorch']:,.0f} | {speed['tensorflow']:,.0f} "
                f"| {fmt_ratio(speed['keras'] / speed['pytorch'])} "
                f"| {fmt_ratio(speed['keras'] / speed['tensorflow'])} |"
            )

    print(
        f"\nShare of the float32 matmul ceiling: GFLOP/s of the best window (train "
        f"step FLOPs counted as 3x the forward matmul FLOPs, formula in the "
        f"script's docstring) against the median GFLOP/s of a "
        f"{args.matmul_size}² matmul on {args.threads} thread(s) by the library "
        f"that ran it (the Keras backend's own matmul for the Translator, "
        f"`torch.matmul`, `tf.matmul`), measured in the same process.\n"
    )
    print(
        "| run | Keras backend | GFLOP per step | Translator GFLOP/s "
        "| PyTorch GFLOP/s | TF GFLOP/s | ceiling GFLOP/s (backend / torch / tf) "
        "| share of ceiling (Translator / PyTorch / TF) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    library = {"keras": None, "pytorch": "torch", "tensorflow": "tensorflow"}
    for run, by_backend in results.items():
        for backend, r in by_backend.items():
            if r is None:
                continue
            achieved = {
                k: r["flops"] * r["steps"] / min(v) / 1e9
                for k, v in r["seconds"].items()
            }
            ceiling = {
                k: r["ceiling"][lib or r["backend"]] for k, lib in library.items()
            }
            share = " / ".join(f"{achieved[k] / ceiling[k]:.0%}" for k in PEERS)
            print(
                f"| {run} | {backend} | {r['flops'] / 1e9:.1f} "
                f"| {achieved['keras']:.1f} | {achieved['pytorch']:.1f} "
                f"| {achieved['tensorflow']:.1f} "
                f"| {ceiling['keras']:.0f} / {ceiling['pytorch']:.0f} "
                f"/ {ceiling['tensorflow']:.0f} | {share} |"
            )

    targets = [
        ("fast/big", "best backend >= 1.0x plain PyTorch", "best", 1.0),
        ("fast/big", "every backend >= 1.0x plain PyTorch", "every", 1.0),
        ("feeding/big", "input feeding, big, every backend >= 1.2x", "every", 1.2),
        ("feeding/small", "input feeding, small, every backend >= 1.2x", "every", 1.2),
        ("feeding/small", "input feeding, small, best backend >= 1.3x", "best", 1.3),
    ]
    rows = []
    for run, text, kind, goal in targets:
        ratios = {
            b: s["keras"] / s["pytorch"] for (r, b), s in medians.items() if r == run
        }
        if not ratios:
            continue
        values = ", ".join(f"{b} {fmt_ratio(v)}" for b, v in ratios.items())
        # A Keras backend's best row counts (torch: eager or `jit_compile=True`).
        best = {}
        for label, ratio in ratios.items():
            backend = results[run][label]["backend"]
            best[backend] = max(best.get(backend, 0.0), ratio)
        if kind == "best":
            verdict = "met" if max(best.values()) >= goal else "not met"
        elif min(best.values()) < goal:
            verdict = "not met"
        else:
            verdict = "met" if len(best) == len(BACKENDS) else "not all measured"
        label = "fast path, " + text if run.startswith("fast") else text
        rows.append(f"| {label} | {verdict}: {values} |")
    if rows:
        print(
            "\nAgainst the targets (Translator / plain PyTorch, medians; a Keras "
            f"backend's best row counts, torch's `{JIT_ROW}` included):\n"
        )
        print("| target | result |")
        print("|---|---|")
        print("\n".join(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=None, choices=RUNS)
    parser.add_argument("--backends", nargs="+", default=None, choices=BACKENDS)
    parser.add_argument("--steps", type=int, default=None, help="train steps a window")
    parser.add_argument("--windows", type=int, default=None, help="timed windows each")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--matmul-size", type=int, default=None)
    parser.add_argument(
        "--tf-lstm",
        choices=("scan", "block"),
        default="scan",
        help="the plain TF model's LSTM: tf.scan, or the fused BlockLSTMV2",
    )
    parser.add_argument(
        "--check-loss",
        type=int,
        default=0,
        help="before timing, copy the Translator's weights into the peers and train "
        "N steps on one batch; fail unless the losses agree (see `worker`) and fall",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: fast/big and feeding/small on JAX, 2 windows of few "
        "steps, the loss check on",
    )
    add_worker_arguments(parser, "run", RUNS, f"torch: skip the `{JIT_ROW}` runs")
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    quick = args.quick
    args.runs = args.runs or (["fast/big", "feeding/small"] if quick else list(RUNS))
    args.backends = args.backends or (["jax"] if quick else list(BACKENDS))
    args.windows = args.windows or (2 if quick else 5)
    args.matmul_size = args.matmul_size or (1024 if quick else 2048)
    check_loss = args.check_loss or (4 if quick else 0)
    results, args.steps_of = {}, {}
    for run in args.runs:
        results[run] = {}
        steps = args.steps or (
            (2 if quick else 6) if run.endswith("big") else (4 if quick else 30)
        )
        args.steps_of[run] = steps
        for backend in args.backends:
            argv = ["--run", run, "--steps", steps, "--windows", args.windows]
            argv += ["--threads", args.threads, "--matmul-size", args.matmul_size]
            argv += ["--tf-lstm", args.tf_lstm, "--check-loss", check_loss]
            rows = [(backend, [])]
            if backend == "torch" and not args.eager_only:
                rows.append((JIT_ROW, ["--jit-compile"]))
            for label, extra in rows:
                result = run_worker(
                    __file__, backend, args.threads, argv + extra, timeout=3600
                )
                results[run][label] = result
                if result is not None:
                    log(f"  parameters: {result['params']}")
                    for name, values in result.get("losses", {}).items():
                        losses = " ".join(f"{v:.4f}" for v in values)
                        log(f"  {name} loss on a repeated batch: {losses}")
    report(results, args)


if __name__ == "__main__":
    main()
