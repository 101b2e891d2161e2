"""The application models' GRU and LSTM encoders beside Keras's layers.

`AttentionClassifier` and `SequenceTagger` encode right-padded token rows with a
bidirectional GRU or LSTM, `AttentiveLanguageModel` with one direction. On
PyTorch's CPU backend Keras's GRU and LSTM loop over the steps in Python
(masked or not); there the models' layers (`keras_rnnattn.layers.recurrent`)
run PyTorch's fused kernel through `_run_rnn` instead, unmasked, a
bidirectional one with its backward RNN over each row reversed within its
length, with the same weights and outputs (zeros at the padding). This script
times that path on every backend; the layers take it on torch only, where it
pays (`_own_rnn_kernels`).

One process per Keras backend, pinned to `--threads` CPUs. Each times a train
step (`train_on_batch`: forward, gradients, Adam) of a model that is only the
encoder and a mean squared error, B=64, S=40 steps, input 128, 128 units per
direction, float32; the bidirectional encoder gets rows of 5 to 40 real steps
and their mask, the one-direction RNN whole rows. ms, median of `--repeats`
steps after a warm-up, ours and Keras's in alternating steps.

    python benchmarks/rnn_encoders.py
"""

import argparse
import statistics
import sys
import time

from _common import run_worker

BACKENDS = ("tensorflow", "jax", "torch")
B, S, D, UNITS = 64, 40, 128, 128
ENCODERS = (("bidirectional, masked", "bi"), ("one direction", "uni"))


def time_pair(models, inputs, target, repeats):
    """`{label: median ms}` of alternating train steps of `models`."""
    for model in models.values():
        model.compile(optimizer="adam", loss="mse")
        model.train_on_batch(inputs, target)  # warm-up (compilation)
    times = {label: [] for label in models}
    for _ in range(repeats):
        for label, model in models.items():
            start = time.perf_counter()
            model.train_on_batch(inputs, target)
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(v) * 1000 for label, v in times.items()}


def worker(args):
    import json

    import keras
    import numpy as np

    from keras_rnnattn.layers import recurrent

    # The fused path on every backend (the layers take it on torch only).
    recurrent._own_rnn_kernels = lambda: True
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, S, D)).astype("float32")
    lengths = rng.integers(5, S + 1, size=B)
    mask = np.arange(S)[None, :] < lengths[:, None]  # (B, S)
    y = rng.normal(size=(B, S, 2 * UNITS)).astype("float32")
    result = {}
    for cell in ("gru", "lstm"):
        stock = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        models = {}
        for label, wrapper in (
            ("ours", recurrent.Bidirectional),
            ("keras", keras.layers.Bidirectional),
        ):
            inputs = keras.Input((None, D))
            mask_in = keras.Input((None,), dtype="bool")
            layer = wrapper(stock(UNITS, return_sequences=True))
            models[label] = keras.Model([inputs, mask_in], layer(inputs, mask=mask_in))
        for label, ms in time_pair(models, [x, mask], y, args.repeats).items():
            result[f"bi/{cell}/{label}"] = ms
        models = {}
        for label, layer in (
            ("ours", recurrent.recurrent_layer(cell, UNITS, name="rnn")),
            ("keras", stock(UNITS, return_sequences=True)),
        ):
            inputs = keras.Input((None, D))
            models[label] = keras.Model(inputs, layer(inputs))
        for label, ms in time_pair(models, x, y[..., :UNITS], args.repeats).items():
            result[f"uni/{cell}/{label}"] = ms
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
        "## GRU and LSTM encoders beside Keras's layers "
        "(`benchmarks/rnn_encoders.py`)\n"
    )
    print(
        "A train step (`train_on_batch`: forward, gradients, Adam) of a model that "
        f"is only the encoder and a mean squared error, B={B}, S={S} steps, input "
        f"{D}, {UNITS} units per direction, float32, {args.threads} thread(s); ms, "
        f"median of {args.repeats} steps after a warm-up, the two in alternating "
        "steps. Bidirectional: rows of 5 to "
        f"{S} real steps (padding at the end) and their mask; one direction: whole "
        "rows, no mask. Ours: the path the models' layers take on torch only "
        "(`_own_rnn_kernels`): the recurrence kernels of `_run_rnn`, unmasked, the "
        "backward RNN over each row reversed within its length; peers: "
        "`keras.layers.Bidirectional` given the mask, `keras.layers.GRU` / "
        "`LSTM`.\n"
    )
    print("| encoder | cell | backend | keras-rnnattn | Keras | Keras / ours |")
    print("|---|---|---|---|---|---|")
    for name, key in ENCODERS:
        for cell in ("gru", "lstm"):
            for backend, times in rows.items():
                ours, peer = times[f"{key}/{cell}/ours"], times[f"{key}/{cell}/keras"]
                print(
                    f"| {name} | {cell} | {backend} | {ours:.1f} | {peer:.1f} | "
                    f"{peer / ours:.2f}x |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
