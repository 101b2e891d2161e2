"""The application models' bidirectional RNN encoder beside Keras's masked one.

`AttentionClassifier` and `SequenceTagger` encode right-padded token rows with a
bidirectional GRU or LSTM. Keras's `Bidirectional` given a mask runs both RNNs
masked, which on PyTorch's CPU backend is a Python loop over the steps; the
models' `Bidirectional` (`keras_rnnattn.models._apps_layers`) runs them
unmasked, the backward one over each row reversed within its length, with the
same weights and the same outputs (zeros at the padding). This script times
that unmasked path on every backend; the layer takes it on torch only, where
it pays (`_unmasked_bidirectional`).

One process per Keras backend, pinned to `--threads` CPUs. Each times a train
step (`train_on_batch`: forward, gradients, Adam) of a model that is only the
encoder and a mean squared error, B=64, S=40 steps, rows of 5 to 40 real steps,
input 128, 128 units per direction, float32; ms, median of `--repeats` steps
after a warm-up, ours and Keras's in alternating steps.

    python benchmarks/bidirectional_encoder.py
"""

import argparse
import statistics
import sys
import time

from _common import run_worker

BACKENDS = ("tensorflow", "jax", "torch")
B, S, D, UNITS = 64, 40, 128, 128


def worker(args):
    import json

    import keras
    import numpy as np

    from keras_rnnattn.models import _apps_layers
    from keras_rnnattn.models._apps_layers import Bidirectional

    # The unmasked path on every backend (the layer takes it on torch only).
    _apps_layers._unmasked_bidirectional = lambda: True

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, S, D)).astype("float32")
    lengths = rng.integers(5, S + 1, size=B)
    mask = np.arange(S)[None, :] < lengths[:, None]  # (B, S)
    y = rng.normal(size=(B, S, 2 * UNITS)).astype("float32")
    result = {}
    for cell in ("gru", "lstm"):
        layer_cls = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        models = {}
        for label, wrapper in (
            ("ours", Bidirectional),
            ("keras", keras.layers.Bidirectional),
        ):
            inputs = keras.Input((None, D))
            mask_in = keras.Input((None,), dtype="bool")
            layer = wrapper(layer_cls(UNITS, return_sequences=True))
            models[label] = keras.Model([inputs, mask_in], layer(inputs, mask=mask_in))
            models[label].compile(optimizer="adam", loss="mse")
            models[label].train_on_batch([x, mask], y)  # warm-up (compilation)
        times = {label: [] for label in models}
        for _ in range(args.repeats):
            for label, model in models.items():
                start = time.perf_counter()
                model.train_on_batch([x, mask], y)
                times[label].append(time.perf_counter() - start)
        for label, values in times.items():
            result[f"{cell}/{label}"] = statistics.median(values) * 1000
    print(json.dumps(result))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 repeats")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.quick:
        args.repeats = 2
    rows = {}
    for backend in args.backends:
        out = run_worker(__file__, backend, args.threads, ["--repeats", args.repeats])
        if out is not None:
            rows[backend] = out
    print(
        "## Bidirectional encoder beside Keras's masked one (`benchmarks/bidirectional_encoder.py`)\n"
    )
    print(
        "A train step (`train_on_batch`: forward, gradients, Adam) of a model that "
        f"is only the encoder and a mean squared error, B={B}, S={S} steps, rows of "
        f"5 to {S} real steps (padding at the end), input {D}, {UNITS} units per "
        f"direction, float32, {args.threads} thread(s); ms, median of "
        f"{args.repeats} steps after a warm-up, the two in alternating steps. Ours: "
        "the unmasked path of the models' `Bidirectional`, which it takes on torch "
        "only (both RNNs unmasked, the backward one over "
        "each row reversed within its length, through the recurrence kernels of "
        "`_run_rnn`); peer: `keras.layers.Bidirectional` with the mask.\n"
    )
    print(
        "| cell | backend | keras-rnnattn (unmasked) | Keras (masked) | Keras / ours |"
    )
    print("|---|---|---|---|---|")
    for cell in ("gru", "lstm"):
        for backend, times in rows.items():
            ours, peer = times[f"{cell}/ours"], times[f"{cell}/keras"]
            print(
                f"| {cell} | {backend} | {ours:.1f} | {peer:.1f} | {peer / ours:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
