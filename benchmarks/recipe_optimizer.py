"""The recipes' optimizer against Keras's Adam: train steps/s of one recipe's model.

Every recipe compiles its model with `training.adam_with_ema` (Adam, each
gradient clipped to norm 5, an average of the weights), which is
`InPlaceAdam`: Adam's update and the clipping as the backend's fused kernels
(torch, TensorFlow). Its reference is what it replaces, Keras's
`keras.optimizers.Adam` with the same options. The model is the Ding
recipe's Translator (`applications/ding_de_en_bahdanau`: bidirectional GRU
encoder, Bahdanau attention, 192 units, dropout 0.3, fixnorm 3.5, 2,000 target
words) on batches of 64 random sentences of 20 words. Per Keras backend, one
process pinned to `--threads` CPUs builds the model twice from one seed and
trains both with `train_on_batch` in alternating windows; train steps/s of the
median window. (Not `fit`: on JAX, Keras's Adam with an average cannot `fit`
a second time, which `InPlaceAdam` mends.) Before timing, both train one
window from the same weights: their losses must agree (the two optimizers
take the same steps).

    python benchmarks/recipe_optimizer.py
"""

import argparse
import json
import time

from _common import median, pin_threads, run_worker

BACKENDS = ("tensorflow", "jax", "torch")
OPTIMIZERS = ("keras", "recipes")
NAMES = {"keras": "keras.optimizers.Adam", "recipes": "adam_with_ema"}
SIZE = dict(batch=64, length=20, vocab=2000)


def make_model(optimizer_name):
    """The Ding recipe's Translator, compiled with one of `OPTIMIZERS`."""
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import WordTokenizer
    from keras_rnnattn.training import adam_with_ema

    keras.utils.set_random_seed(0)
    words = " ".join(f"w{i}" for i in range(SIZE["vocab"] - 4))
    tokenizer = WordTokenizer().fit([words])
    model = Translator(
        tokenizer,
        tokenizer,
        embedding_dim=192,
        units=192,
        bidirectional=True,
        cell="gru",
        attention="bahdanau",
        dropout=0.3,
        fixnorm=3.5,
    )
    if optimizer_name == "keras":
        optimizer = keras.optimizers.Adam(
            2e-3, clipnorm=5.0, use_ema=True, ema_momentum=0.999
        )
    else:
        optimizer = adam_with_ema(2e-3, ema=0.999)
    model.compile(optimizer=optimizer, metrics=[])
    return model


def worker(args):
    pin_threads(args.threads)
    import keras
    import numpy as np
    from seq2seq_train import fake_data

    source, target_in, target_out = fake_data(SIZE, args.steps)
    b = SIZE["batch"]
    batches = [
        ((source[i : i + b], target_in[i : i + b]), target_out[i : i + b])
        for i in range(0, len(source), b)
    ]
    models = {name: make_model(name) for name in OPTIMIZERS}

    def window(model):  # loss of the last step
        for x, y in batches:
            loss = model.train_on_batch(x, y)
        return float(np.ravel(loss)[0])

    # The first window: from the same weights, and it compiles. Reseeded for
    # each: Keras's dropout on torch draws from torch's global generator.
    losses = {}
    for name, model in models.items():
        keras.utils.set_random_seed(1)
        losses[name] = window(model)
    if not np.allclose(losses["keras"], losses["recipes"], rtol=1e-3):
        raise ValueError(
            f"Expected the same loss of both optimizers. Received: {losses}"
        )
    seconds = {name: [] for name in models}
    for _ in range(args.windows):
        for name, model in models.items():
            start = time.perf_counter()
            window(model)
            seconds[name].append(time.perf_counter() - start)
    rates = {name: args.steps / median(values) for name, values in seconds.items()}
    print(json.dumps({"rates": rates, "loss": losses["recipes"]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--steps", type=int, default=10, help="train steps a window")
    parser.add_argument("--windows", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="2 windows of 3 steps")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.quick:
        args.steps, args.windows = 3, 2
    results = {
        backend: run_worker(
            __file__,
            backend,
            args.threads,
            [
                "--steps",
                args.steps,
                "--windows",
                args.windows,
                "--threads",
                args.threads,
            ],
        )
        for backend in args.backends
    }
    print("## The recipes' optimizer (`benchmarks/recipe_optimizer.py`)\n")
    print(
        f"Train steps/s of the Ding recipe's Translator (bidirectional GRU, "
        f"Bahdanau attention, 192 units, dropout 0.3, batch {SIZE['batch']}, "
        f"length {SIZE['length']}, {SIZE['vocab']:,} words), compiled with "
        f"`adam_with_ema(ema=0.999)` (the recipes' optimizer, `InPlaceAdam`) and "
        f"with `keras.optimizers.Adam` of the same options (clipnorm 5, EMA "
        f"0.999), in alternating windows of `train_on_batch` in one process per Keras "
        f"backend: "
        f"median of {args.windows} windows of {args.steps} steps after a "
        f"window in which both trained from the same weights to the same loss. "
        f"Every library pinned to {args.threads} thread(s).\n"
    )
    print(f"| Keras backend | {NAMES['keras']} | {NAMES['recipes']} | ratio |")
    print("|---|---|---|---|")
    for backend, result in results.items():
        if result is None:
            print(f"| {backend} | failed | failed | |")
            continue
        keras_rate, ours = result["rates"]["keras"], result["rates"]["recipes"]
        print(
            f"| {backend} | {keras_rate:.2f} | {ours:.2f} | {ours / keras_rate:.2f}x |"
        )


if __name__ == "__main__":
    main()
