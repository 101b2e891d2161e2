"""Attention layers, forward + backward, beside Keras's own attention layers.

One process per Keras backend. B=64, T=S=50, d=512 (float32): each layer
attends with queries `(B, T, d)` over values `(B, S, d)`; the time is one
forward pass and the gradients of `sum(context)` with respect to the layer's
weights and both inputs. Peers, with the same projections:

- `BahdanauAttention(512)` beside `Dense(512)` on queries and keys, then
  `keras.layers.AdditiveAttention(use_scale=True)` (vᵀ tanh(W_q q + W_k k));
- `LuongAttention("general")` beside `Dense(512)` on keys, then
  `keras.layers.Attention()` (qᵀ W k);
- `LuongAttention("dot")` beside `keras.layers.Attention()`.

Compiled as each backend compiles a train step: `tf.function` on TensorFlow,
`jax.jit` on JAX (weights passed in), eager on torch. Median of `--repeats`
timed calls after a warm-up.

    python benchmarks/attention_layers.py
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BACKENDS = ("tensorflow", "jax", "torch")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B, T, S, D = 64, 50, 50, 512


def pairs():
    """`{name: (ours, peer)}`: functions `(layers) -> call(q, v)` built lazily."""
    import keras

    from keras_rnnattn.layers import BahdanauAttention, LuongAttention

    def ours_bahdanau():
        layer = BahdanauAttention(D)
        return [layer], lambda q, v: layer(q, v)

    def peer_bahdanau():
        wq, wk = keras.layers.Dense(D, use_bias=False), keras.layers.Dense(D)
        att = keras.layers.AdditiveAttention(use_scale=True)
        return [wq, wk, att], lambda q, v: att([wq(q), v, wk(v)])

    def ours_general():
        layer = LuongAttention("general")
        return [layer], lambda q, v: layer(q, v)

    def peer_general():
        wk = keras.layers.Dense(D, use_bias=False)
        att = keras.layers.Attention()
        return [wk, att], lambda q, v: att([q, v, wk(v)])

    def ours_dot():
        layer = LuongAttention("dot")
        return [layer], lambda q, v: layer(q, v)

    def peer_dot():
        att = keras.layers.Attention()
        return [att], lambda q, v: att([q, v])

    return {
        "bahdanau": (ours_bahdanau, peer_bahdanau),
        "luong_general": (ours_general, peer_general),
        "luong_dot": (ours_dot, peer_dot),
    }


def step_fn(build, q, v):
    """A compiled `() -> grads` for the layer stack `build()` on inputs q, v."""
    import keras
    import numpy as np

    backend = keras.backend.backend()
    layers, call = build()
    call(q[:2], v[:2])  # builds the weights
    weights = [w for layer in layers for w in layer.trainable_weights]
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def run(q, v):
            with tf.GradientTape() as tape:
                tape.watch([q, v])
                loss = tf.reduce_sum(call(q, v))
            return tape.gradient(loss, [w.value for w in weights] + [q, v])

        q, v = tf.constant(q), tf.constant(v)
        return lambda: [np.asarray(g) for g in run(q, v)[-1:]]
    if backend == "jax":
        import jax

        def loss(values, q, v):
            with keras.StatelessScope(state_mapping=list(zip(weights, values))):
                return call(q, v).sum()

        grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
        values = [w.value for w in weights]
        return lambda: jax.block_until_ready(grad(values, q, v))
    import torch

    tq = torch.tensor(q, requires_grad=True)
    tv = torch.tensor(v, requires_grad=True)

    def run():
        for w in weights:
            w.value.grad = None
        call(tq, tv).sum().backward()
        return tq.grad

    return run


def worker(args):
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, T, D)).astype("float32")
    v = rng.standard_normal((B, S, D)).astype("float32")
    result = {}
    for name, (ours, peer) in pairs().items():
        for label, build in (("ours", ours), ("peer", peer)):
            fn = step_fn(build, q, v)
            fn()
            fn()  # warm-up (compilation)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            result[f"{name}/{label}"] = statistics.median(times) * 1000
    print(json.dumps(result))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 repeats")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.quick:
        args.repeats = 2
    rows = {}
    for backend in args.backends:
        env = dict(
            os.environ,
            KERAS_BACKEND=backend,
            TF_CPP_MIN_LOG_LEVEL="3",
            OMP_NUM_THREADS=str(args.threads),
            PYTHONPATH=REPO,
        )
        done = subprocess.run(
            [sys.executable, __file__, "--worker", "--repeats", str(args.repeats)],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"{backend}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        rows[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    print("## Attention layers beside Keras's (`benchmarks/attention_layers.py`)\n")
    print(
        f"Forward and the gradients of `sum(context)` with respect to the weights "
        f"and both inputs, B={B}, T=S={S}, d={D}, float32, {args.threads} threads; "
        f"ms, median of {args.repeats} after a warm-up, compiled as each backend "
        "compiles a train step (`tf.function`, `jax.jit`, eager torch). Peers with "
        "the same projections: `Dense` on queries and keys + "
        "`keras.layers.AdditiveAttention(use_scale=True)` for Bahdanau, `Dense` on "
        "keys + `keras.layers.Attention()` for Luong general, "
        "`keras.layers.Attention()` for Luong dot.\n"
    )
    print("| layer | backend | keras-rnnattn | Keras peer | peer / ours |")
    print("|---|---|---|---|---|")
    for name in ("bahdanau", "luong_general", "luong_dot"):
        for backend, times in rows.items():
            ours, peer = times[f"{name}/ours"], times[f"{name}/peer"]
            print(
                f"| {name} | {backend} | {ours:.1f} | {peer:.1f} | {peer / ours:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
