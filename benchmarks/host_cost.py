"""The host's cost of a Translator train step per Keras backend, beside plain PyTorch's.

At a tiny size (batch 4, length 30, vocabulary 64, embedding and units 8) the
arithmetic of a train step is negligible and its time is what the host spends
around it: Python, Keras's per-op dispatch, Dynamo's guards, the wrappers of
each compiled graph, a call per kernel. On a GPU the host issues the kernels
while the device runs them, and a step cannot take less than this cost (an
H200 ran the plain PyTorch fast path's train step at batch 128, 1,024 units,
in about 11 ms: `scripts/gpu_check.sh`). Every recurrent layer takes the path
of a large one (`torch_fused_rnn.OUTSIDE_GRAPH_FROM = 0`), and compiled torch
runs it both ways: as one operator of the graph (`torch_rnn_op`, oneDNN's LSTM
standing in for cuDNN's) and at a graph break (the default).
The Translator is `seq2seq_train.py`'s, trained with `fit`, against its plain
PyTorch model of the same architecture (`nn.LSTM` + `bmm` attention for the
fast path, an `nn.GRUCell` loop for input feeding), in alternating windows in
one process per row, pinned to one thread.

    python benchmarks/host_cost.py
    python benchmarks/host_cost.py --runs fast --backends torch
"""

import argparse
import json
import time

from _common import add_worker_arguments, log, median, pin_threads, run_worker

SIZE = dict(batch=4, length=30, vocab=64, embedding=8, units=8)
RUNS = ("fast", "feeding")
BACKENDS = ("tensorflow", "jax", "torch")
JIT_ROWS = (
    ("torch, jit_compile=True, operator", []),
    ("torch, jit_compile=True, graph break", ["--graph-break"]),
)


def worker(args):
    pin_threads(args.threads)
    import keras
    from seq2seq_train import CONFIGS, keras_trainer, pytorch_trainer

    from keras_rnnattn._backend import torch_options

    if keras.backend.backend() == "torch":
        from keras_rnnattn._backend.experimental.torch_rnn_op import _operators
        from keras_rnnattn._backend.kernels import torch_fused_rnn

        torch_fused_rnn.OUTSIDE_GRAPH_FROM = 0  # a large layer's path
        _operators()  # defined before the step is traced
    with torch_options(rnn_operator=not args.graph_break):
        measure(args, CONFIGS[args.run], keras_trainer, pytorch_trainer)


def measure(args, config, keras_trainer, pytorch_trainer):
    """Prints the seconds per step of the Translator and of plain PyTorch."""
    trainers = {
        "keras": keras_trainer(config, SIZE, args.steps, args.jit_compile or "auto"),
        "pytorch": pytorch_trainer(config, SIZE, args.steps),
    }
    seconds = {name: [] for name in trainers}
    for window in range(args.windows + 2):  # two warm-up windows: compiling
        for name, trainer in trainers.items():
            start = time.perf_counter()
            trainer.train()
            if window >= 2:
                seconds[name].append((time.perf_counter() - start) / args.steps)
    print(json.dumps({"seconds": seconds}))


def report(results, args):
    print("## The host's cost of a train step (`benchmarks/host_cost.py`)\n")
    print(
        f"Milliseconds per train step at a size where the arithmetic is "
        f"negligible (batch {SIZE['batch']}, length {SIZE['length']}, vocabulary "
        f"{SIZE['vocab']}, embedding and units {SIZE['units']}): what the host "
        f"spends around a step, which bounds a step on a GPU (the last column "
        f"divides times: lower is faster). The `seq2seq_train.py` "
        f"Translator (`fast`: LSTM, Luong dot attention, the fast path; `feeding`: "
        f"GRU, Bahdanau attention, input feeding) with its recurrent layers on the "
        f"path of large ones, against its plain PyTorch model, {args.steps} steps a "
        f"window, the median of {args.windows} windows after two warm-up windows, "
        f"one thread. Compiled torch with the fused kernel as an `operator` of the "
        f"graph (`torch_options(rnn_operator=True)`) or at a `graph break` (the "
        f"default).\n"
    )
    print(
        "| run | Keras backend | Translator ms | plain PyTorch ms "
        "| time, Translator / PyTorch |"
    )
    print("|---|---|---|---|---|")
    for run, rows in results.items():
        for label, r in rows.items():
            if r is None:
                print(f"| {run} | {label} | failed | | |")
                continue
            ms = {k: median(v) * 1e3 for k, v in r["seconds"].items()}
            print(
                f"| {run} | {label} | {ms['keras']:.2f} | {ms['pytorch']:.2f} "
                f"| {ms['keras'] / ms['pytorch']:.2f}x |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=RUNS)
    parser.add_argument(
        "--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS
    )
    parser.add_argument("--steps", type=int, default=None, help="train steps a window")
    parser.add_argument("--windows", type=int, default=None, help="timed windows each")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="smoke run: few steps")
    parser.add_argument("--graph-break", action="store_true", help=argparse.SUPPRESS)
    add_worker_arguments(parser, "run", RUNS, "torch: skip the jit_compile=True rows")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    args.steps = args.steps or (5 if args.quick else 20)
    args.windows = args.windows or (2 if args.quick else 5)
    results = {}
    for run in args.runs:
        results[run] = {}
        for backend in args.backends:
            argv = ["--run", run, "--steps", args.steps, "--windows", args.windows]
            argv += ["--threads", args.threads]
            rows = [(backend, [])]
            if backend == "torch" and not args.eager_only:
                rows += [
                    (label, ["--jit-compile", *extra]) for label, extra in JIT_ROWS
                ]
            for label, extra in rows:
                log(f"{run}: {label}")
                results[run][label] = run_worker(
                    __file__, backend, args.threads, argv + extra, timeout=1800
                )
    report(results, args)


if __name__ == "__main__":
    main()
