"""Decoding speed of a shipped preset per Keras backend: `translate`, greedy and beam 4.

`decode.py` times a random-weight Translator; this times what users run: the
shipped `ding_de_en_bahdanau` preset (an ensemble of two Translators, each a
bidirectional GRU encoder, Bahdanau attention with input feeding, the lexical
model and the fixnorm output layer), translating 64 German sentences (the
demo's and the longer ones of `scripts/gpu_check.py`, repeated) with
`Translator.translate`: tokenizing, the batched search, detokenizing. Greedy and
beam 4 with the preset's length penalty. The search stops once every sentence
has ended, so its steps are those of real sentences. Torch runs twice: eager,
and with `compile(jit_compile=True)`, which runs the steps of the decoding
loop as one `while_loop` traced by `torch.compile` and compiled by inductor
(the first call holds the compilation).
Each (backend, mode) runs in a fresh process pinned to one CPU: a first call,
then `--repeats` timed calls; sentences/s of the median call. The processes run
`--rounds` times in turn (3), and each cell keeps its median round.

    python benchmarks/preset_decode.py
    python benchmarks/preset_decode.py --backends jax torch --repeats 3
    python benchmarks/preset_decode.py --quick     # a smoke run
"""

import argparse
import json
import time

from _common import (
    add_worker_arguments,
    median,
    median_round,
    print_round_rates,
    run_worker,
)

BACKENDS = ("tensorflow", "jax", "torch")
PRESET = "ding_de_en_bahdanau"
MODES = ("greedy", "beam4")
COMPILED_ROW = "torch, `jit_compile=True`"


def texts(count):
    """`count` German sentences: the demo's and longer ones, repeated."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
    from gpu_check import german

    sentences = german()
    return (sentences * (count // len(sentences) + 1))[:count]


def worker(args):
    from keras_rnnattn.metrics.length_buckets import LENGTH_PENALTIES
    from keras_rnnattn.models import Translator
    from keras_rnnattn.presets import preset_length_penalty

    model = Translator.from_preset(PRESET)
    if args.jit_compile:
        model.compile(jit_compile=True)  # torch: the decoding loop compiled
    batch = texts(args.sentences)
    kwargs = {}
    if args.mode == "beam4":
        kwargs = dict(beam_size=4, length_penalty=preset_length_penalty(PRESET))
    start = time.perf_counter()
    model.translate(batch, **kwargs)  # compiles
    first_seconds = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.translate(batch, **kwargs)
        times.append(time.perf_counter() - start)
    result = {
        "rate": len(batch) / median(times),
        "rates": [len(batch) / t for t in times],
        "first_seconds": first_seconds,
    }
    if args.mode == "beam4":
        # `pick_length_penalty`'s sweep: the same search at other α values.
        start = time.perf_counter()
        for alpha in LENGTH_PENALTIES:
            model.translate(batch, beam_size=4, length_penalty=alpha)
        result["sweep_seconds"] = time.perf_counter() - start
        result["sweep_calls"] = len(LENGTH_PENALTIES)
    print(json.dumps(result))


def report(results, args):
    print("## Decoding a shipped preset (`benchmarks/preset_decode.py`)\n")
    print(
        f"`{PRESET}` (two Translators averaged; BPE vocabularies of 2,000) "
        f"translates {args.sentences} German sentences with `translate`, "
        "greedy and beam 4 (the preset's length penalty), on one CPU thread. "
        "One fresh process per backend and mode; sentences/s of the median of "
        f"{args.repeats} calls after a first call that holds the compilation "
        f"(its seconds in the last column), in the median of {args.rounds} "
        f"round(s) that run every process in turn. The row {COMPILED_ROW}: "
        "`Translator.compile(jit_compile=True)` on torch: the steps of each "
        "decoding loop as one `while_loop` traced by `torch.compile` and "
        "compiled by inductor. Sweep: after those calls, beam 4 at each of "
        "`pick_length_penalty`'s α values (`LENGTH_PENALTIES`, 5), seconds "
        "in all, beside as many of the timed calls' median: the "
        "search takes α as an input, so no α compiles it again."
        + (" Smoke run (`--quick`): too few calls to trust." if args.quick else "")
        + "\n"
    )
    print(
        "| Keras backend | greedy | beam 4 | greedy / JAX's | beam 4 / JAX's "
        "| first call, s (greedy / beam 4) | sweep of the α values, s "
        "| as many timed calls, s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    jax = results.get("jax", {})
    for backend, by_mode in results.items():
        cells = [
            "failed" if by_mode.get(m) is None else f"{by_mode[m]['rate']:,.1f}"
            for m in MODES
        ]
        for mode in MODES:
            ours, theirs = by_mode.get(mode), jax.get(mode)
            cells.append(
                f"{ours['rate'] / theirs['rate']:.2f}x" if ours and theirs else ""
            )
        firsts = [by_mode.get(mode) for mode in MODES]
        cells.append(
            " / ".join(f"{r['first_seconds']:.1f}" if r else "-" for r in firsts)
        )
        beam = by_mode.get("beam4")
        if beam and "sweep_seconds" in beam:
            calls = beam["sweep_calls"] * args.sentences / beam["rate"]
            cells += [f"{beam['sweep_seconds']:.2f}", f"{calls:.2f}"]
        else:
            cells += ["", ""]
        print(f"| {backend} | {' | '.join(cells)} |")
    print_round_rates(results, MODES, {"greedy": "greedy", "beam4": "beam 4"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, choices=BACKENDS)
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of every worker in turn, the median round per cell (3; 1 quick)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: JAX only, 8 sentences"
    )
    add_worker_arguments(
        parser, "mode", MODES, "torch: skip the runs with `jit_compile=True`"
    )
    args = parser.parse_args()
    args.sentences = args.sentences or (8 if args.quick else 64)
    args.repeats = args.repeats or (2 if args.quick else 5)
    if args.worker:
        return worker(args)
    args.backends = args.backends or (["jax"] if args.quick else list(BACKENDS))
    args.rounds = args.rounds or (1 if args.quick else 3)
    cells = []  # (row, mode, backend, argv) in the order of a round
    for backend in args.backends:
        rows = [(backend, False)]
        if backend == "torch" and not args.eager_only:
            rows.append((COMPILED_ROW, True))
        for row, jit_compile in rows:
            for mode in MODES:
                argv = ["--mode", mode, "--sentences", args.sentences]
                argv += ["--repeats", args.repeats]
                argv += ["--jit-compile"] if jit_compile else []
                cells.append((row, mode, backend, argv))
    runs = {}
    for _ in range(args.rounds):
        for row, mode, backend, argv in cells:
            run = run_worker(__file__, backend, 1, argv)
            runs.setdefault(row, {}).setdefault(mode, []).append(run)
    results = {
        row: {mode: median_round(r) for mode, r in by_mode.items()}
        for row, by_mode in runs.items()
    }
    report(results, args)


if __name__ == "__main__":
    main()
