"""Translator decoding speed and peak memory per Keras backend: greedy, beam 4 and 8,
beside a plain PyTorch greedy loop of the same model.

A Translator (GRU encoder, Bahdanau attention with input feeding, GRU decoder:
the `feeding` model of `seq2seq_train.py`; vocabulary 4k, embedding 128, 256
units, random weights) decodes 64 source sentences of 15 tokens, at most 20
target tokens each, with

- `Translator.generate_ids` (the batched `keras_rnnattn.decoding` searches, one
  compiled function per setting on JAX and TensorFlow): greedy, beam 4, beam 8;
- a per-sentence beam-4 loop: one sentence at a time, a Python loop over the
  steps calling the same `next_fn` on the 4 hypotheses and choosing them with
  NumPy (how beam search is usually written around a PyTorch seq2seq model);
- on torch also with `compile(jit_compile=True)`, which runs the steps of each
  decoding loop as one `while_loop` that `torch.compile` traces and inductor
  compiles, in the first call; and the same with a call of the compiled step
  for every step (`whole_loop` off);
- plain PyTorch (`pytorch_greedy`, in the torch process): the same model as
  `nn.GRU`, `nn.GRUCell` and `nn.Linear` modules holding the Translator's
  weights, decoded greedily in a Python loop that stops once every row has
  ended (read on the host after each step, as such loops are written). Its
  tokens must equal the Translator's (checked before timing).

The untrained model rarely ends a sentence early, so every method does close to
`max_length` steps. Each (backend, mode) runs in a fresh process: build the
model, a first call (which holds the compilation), `--repeats` timed calls
(sentences/s, the median counts), then one more call with an RSS sampler; the
processes run `--rounds` times in turn (3), and each cell keeps its median round.
Memory is the resident set size (RSS) read from /proc/self/statm by a thread
every millisecond during a call, minus the RSS after the model was built (before
any decoding): the decoding call's peak, and the first call's (compilation
included); and the process's own peak (`ru_maxrss`: imports, model, compiling,
decoding). Greedy and beam 4 also give milliseconds per step, beside those of
the same model with embedding 8, 8 units and 40 tokens (`TINY`), built and
decoded in the same process after the rest: its arithmetic takes microseconds,
so its time per step is what the backend spends on a step besides the
arithmetic.

    python benchmarks/decode.py
    python benchmarks/decode.py --backends jax --sentences 32
    python benchmarks/decode.py --backends jax torch --modes greedy beam4 --rounds 5
    python benchmarks/decode.py --quick            # a smoke run
"""

import argparse
import json
import time

from _common import (
    MIB,
    PeakRSS,
    add_worker_arguments,
    max_rss_bytes,
    median,
    median_round,
    print_round_rates,
    rss_bytes,
    run_worker,
)

BACKENDS = ("tensorflow", "jax", "torch")
MODES = ("greedy", "beam4", "beam8", "beam4_loop", "pytorch_greedy")
MODE_NAMES = {
    "greedy": "greedy (batched)",
    "beam4": "beam 4 (batched)",
    "beam8": "beam 8 (batched)",
    "beam4_loop": "beam 4, per-sentence loop",
    "pytorch_greedy": "plain PyTorch greedy",
}
# Torch runs these modes a second time with `compile(jit_compile=True)`.
COMPILED_MODES = ("greedy", "beam4")
COMPILED_ROW = "torch, `jit_compile=True`"
# The same, with every step a call of the compiled step (no `while_loop`).
STEPS_ROW = "torch, `jit_compile=True`, a call a step"
# The model of `seq2seq_train.py`'s `feeding` runs, which has a plain PyTorch twin.
CONFIG = dict(cell="gru", attention="bahdanau", input_feeding=True)
SIZE = dict(vocab=4000, embedding=128, units=256, source_length=15, max_length=20)
# The same model with layers so small that their arithmetic takes microseconds:
# its time per step is what a backend spends on a step besides the arithmetic
# (dispatch, the loop, a compiled call's entry).
TINY = dict(SIZE, vocab=40, embedding=8, units=8)


def build_model(size=SIZE):
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import WordTokenizer

    keras.utils.set_random_seed(0)
    words = " ".join(f"w{i}" for i in range(size["vocab"] - 4))
    tokenizer = WordTokenizer().fit([words])
    return Translator(
        tokenizer,
        tokenizer,
        embedding_dim=size["embedding"],
        units=size["units"],
        bidirectional=False,
        **CONFIG,
    )


def pytorch_greedy_decoder(model):
    """A plain PyTorch greedy decoder holding `model`'s weights (torch backend).

    Returns `decode(source) -> (B, max_length)` int tokens, `end_id` after
    each row's end, as `generate_ids`.
    """
    import torch
    from seq2seq_train import copy_to_pytorch, pytorch_trainer

    size = dict(SIZE, batch=1, length=SIZE["source_length"])
    twin = pytorch_trainer(CONFIG, size, steps=1).model
    copy_to_pytorch(model, twin, CONFIG)
    tok = model.target_tokenizer
    bos, eos, pad = tok.bos_id, tok.eos_id, tok.pad_id

    @torch.no_grad()
    def decode(source, max_length):
        source = torch.as_tensor(source, dtype=torch.long)
        memory, _ = twin.encoder(twin.source_embedding(source))  # (B, S, U)
        keys = twin.w_key(memory)
        padding = source == pad
        s = torch.tanh(twin.bridge(memory[:, -1]))
        token = torch.full((source.shape[0],), bos, dtype=torch.long)
        finished = torch.zeros(source.shape[0], dtype=torch.bool)
        tokens = torch.full((source.shape[0], max_length), eos, dtype=torch.long)
        for t in range(max_length):
            hidden = torch.tanh(twin.w_query(s)[:, None] + keys + twin.b)
            scores = (hidden @ twin.v).masked_fill(padding, float("-inf"))
            context = torch.bmm(torch.softmax(scores, -1)[:, None], memory)[:, 0]
            s = twin.cell(torch.cat([twin.target_embedding(token), context], -1), s)
            o = torch.tanh(twin.attention_dense(torch.cat([context, s], -1)))
            logits = twin.out(o)
            logits[:, [pad, bos]] = float(
                "-inf"
            )  # never produced, as in the Translator
            token = torch.where(finished, eos, logits.argmax(-1))
            tokens[:, t] = token
            finished |= token == eos
            if bool(finished.all()):
                break
        return tokens.numpy()

    return decode


def beam_loop(model, source, beam_size, max_length):
    """Beam search for one sentence `(1, S)`: a Python loop around `next_fn`."""
    import numpy as np
    from keras import ops

    tok = model.target_tokenizer
    state = model.initial_state(source)
    tokens = np.array([tok.bos_id], "int32")
    hypotheses = [([], 0.0)]  # (tokens, log-probability) of the alive beams
    finished = []
    for step in range(max_length):
        logits, state, _ = model.next_fn(tokens, state)
        logits = ops.convert_to_numpy(logits).astype("float64")  # (k, V)
        top = logits.max(-1, keepdims=True)
        log_probs = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
        scores = np.array([h[1] for h in hypotheses])[:, None] + log_probs  # (k, V)
        best = np.argsort(scores, axis=None)[::-1][: 2 * beam_size]
        parents, words = np.unravel_index(best, scores.shape)
        alive = []
        for parent, word in zip(parents, words):
            hypothesis = (hypotheses[parent][0] + [int(word)], scores[parent, word])
            if word == tok.eos_id or step == max_length - 1:
                finished.append(hypothesis)
            elif len(alive) < beam_size:
                alive.append((hypothesis, parent))
            if len(alive) == beam_size:
                break
        if not alive or len(finished) >= beam_size:
            break
        hypotheses = [h for h, _ in alive]
        rows = np.array([p for _, p in alive], "int32")
        state = {
            "states": [ops.take(s, rows, axis=0) for s in state["states"]],
            "memory": {
                k: ops.take(v, np.zeros_like(rows), axis=0)
                for k, v in state["memory"].items()
            },
        }
        tokens = np.array([h[0][-1] for h in hypotheses], "int32")
    return max(finished, key=lambda h: h[1])[0]


def steps_run(model, tokens):
    """The steps a search ran: up to the latest first end among its rows."""
    import numpy as np

    tokens = np.asarray(tokens)
    ended = tokens == model.target_tokenizer.eos_id
    lengths = np.where(ended.any(1), ended.argmax(1) + 1, tokens.shape[1])
    return int(lengths.max())


def ms_per_step(args, size, beam_size):
    """Milliseconds per decoding step of a fresh model of `size`: the median of
    `args.repeats` calls after a first one, over the steps a call ran."""
    import numpy as np

    model = build_model(size)
    if args.jit_compile:
        model.compile(jit_compile=True)
    shape = (args.sentences, size["source_length"])
    source = np.random.default_rng(0).integers(4, size["vocab"], shape)
    steps = steps_run(
        model, model.generate_ids(source, beam_size, size["max_length"])[0]
    )
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.generate_ids(source, beam_size, size["max_length"])
        times.append(time.perf_counter() - start)
    return 1e3 * median(times) / steps


def worker(args):
    from keras_rnnattn._backend import torch_options

    # The compiled loop's steps one call each, or as one while_loop.
    with torch_options(whole_loop=not args.step_by_step):
        measure(args)


def measure(args):
    import numpy as np

    model = build_model()
    if args.jit_compile:
        model.compile(jit_compile=True)  # torch: the decoding steps compiled
    rng = np.random.default_rng(0)
    shape = (args.sentences, SIZE["source_length"])
    source = rng.integers(4, SIZE["vocab"], shape).astype("int32")
    max_length = SIZE["max_length"]
    built = rss_bytes()

    if args.mode == "beam4_loop":
        count = args.loop_sentences

        def decode():
            for i in range(count):
                beam_loop(model, source[i : i + 1], 4, max_length)

    elif args.mode == "pytorch_greedy":
        count = args.sentences
        plain = pytorch_greedy_decoder(model)
        want = np.asarray(model.generate_ids(source, 1, max_length)[0])
        got = plain(source, max_length)
        if not np.array_equal(got, want):
            raise ValueError(
                "The plain PyTorch decoder's tokens differ from the Translator's "
                f"in {int(np.sum(np.any(got != want, axis=1)))} of {len(want)} rows."
            )

        def decode():
            plain(source, max_length)

    else:
        count = args.sentences
        beam_size = 1 if args.mode == "greedy" else int(args.mode[len("beam") :])

        def decode():
            model.generate_ids(source, beam_size, max_length)

    with PeakRSS() as first:  # compiles on JAX and TensorFlow
        start = time.perf_counter()
        decode()
        first_seconds = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        decode()
        times.append(time.perf_counter() - start)
    with PeakRSS() as steady:
        decode()
    result = {
        "rates": [count / t for t in times],
        "rate": count / median(times),
        "first_seconds": first_seconds,
        "built_mib": built / MIB,
        "peak_mib": (steady.peak - built) / MIB,
        "first_peak_mib": (first.peak - built) / MIB,
        "process_peak_mib": max_rss_bytes() / MIB,
    }
    if args.mode in ("greedy", "beam4"):  # after the process's peak was read
        beam_size = 1 if args.mode == "greedy" else 4
        tokens = model.generate_ids(source, beam_size, max_length)[0]
        result["step_ms"] = 1e3 * median(times) / steps_run(model, tokens)
        result["tiny_step_ms"] = ms_per_step(args, TINY, beam_size)
    print(json.dumps(result))


def report(results, args):
    """The markdown section: speed, then memory."""
    print("## Decoding speed and memory (`benchmarks/decode.py`)\n")
    print(
        f"A Translator (GRU encoder, Bahdanau attention with input feeding, GRU "
        f"decoder; vocabulary 4k, embedding 128, 256 units; random weights) decodes "
        f"{args.sentences} sentences of {SIZE['source_length']} tokens, at most "
        f"{SIZE['max_length']} target tokens, batched with `generate_ids` (greedy, "
        f"beam 4, beam 8; one compiled function per setting on JAX and "
        f"TensorFlow); the per-sentence loop decodes {args.loop_sentences} "
        f"sentences one at a time (a Python loop over the steps around the same "
        f"`next_fn`, choosing the 4 hypotheses with NumPy). Plain PyTorch: the same "
        f"weights in `nn.GRU`/`nn.GRUCell`/`nn.Linear`, a greedy Python loop that "
        f"stops when every row has ended, its tokens equal to the Translator's "
        f"(checked). One fresh process per "
        f"backend and mode, {args.threads} thread(s). Sentences/s: median of "
        f"{args.repeats} timed calls after a first call that holds the "
        f"compilation (its seconds in the last column), in the median of "
        f"{args.rounds} round(s) that run every process in turn (each round's "
        f"rate of the compared rows below the tables). The row {COMPILED_ROW}: "
        f"the torch backend with `Translator.compile(jit_compile=True)`, which "
        f"runs the steps of each decoding loop as one `while_loop` traced by "
        f"`torch.compile` and compiled by inductor; the row {STEPS_ROW}: the "
        f"same with one call of the "
        f"compiled step for every step."
        + (
            " Smoke run (`--quick`): too few repetitions to trust."
            if args.quick
            else ""
        )
        + "\n"
    )
    table_modes = [m for m in MODES if m != "pytorch_greedy"]
    plain = results.get("torch", {}).get("pytorch_greedy")
    jax = results.get("jax", {})
    print(
        "| Keras backend | greedy (batched) | beam 4 (batched) | beam 8 (batched) "
        "| beam 4, per-sentence loop | beam 4 batched / loop "
        "| greedy / plain PyTorch greedy | greedy / JAX's | beam 4 / JAX's "
        "| first call, s (greedy / beam 4) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for backend, by_mode in results.items():
        cells = [
            ("failed" if m in by_mode else "")
            if by_mode.get(m) is None
            else f"{by_mode[m]['rate']:,.2f}"
            for m in table_modes
        ]
        batched, loop = by_mode.get("beam4"), by_mode.get("beam4_loop")
        cells.append(
            f"{batched['rate'] / loop['rate']:.1f}x" if batched and loop else ""
        )
        greedy = by_mode.get("greedy")
        cells.append(
            f"{greedy['rate'] / plain['rate']:.2f}x" if greedy and plain else ""
        )
        for mode in ("greedy", "beam4"):
            ours, theirs = by_mode.get(mode), jax.get(mode)
            cells.append(
                f"{ours['rate'] / theirs['rate']:.2f}x" if ours and theirs else ""
            )
        firsts = [by_mode.get(mode) for mode in ("greedy", "beam4")]
        cells.append(
            " / ".join(f"{r['first_seconds']:.1f}" if r else "-" for r in firsts)
        )
        print(f"| {backend} | {' | '.join(cells)} |")
    if plain:
        print(
            f"| plain PyTorch (eager, `nn.GRUCell` loop) | {plain['rate']:,.2f} "
            f"| | | | | 1.00x | | | {plain['first_seconds']:.1f} |"
        )
    print_round_rates(results, ("greedy", "beam4"), MODE_NAMES)
    step_table(results)

    print(
        "\nPeak memory, MiB. A thread samples the process's resident set size "
        "(/proc/self/statm) every millisecond during a call; the table gives "
        "that peak minus the RSS after the model was built and before any "
        "decoding: for a call after the timed ones (what decoding holds: "
        "compiled functions, kept allocations, the call's own working set) and "
        "for the first call (compilation included). The allocators keep freed "
        "memory, so the RSS does not fall back after a call: the later call's "
        "figure is the high-water mark of decoding in that process. The whole "
        "process's peak (`ru_maxrss`, imports included) is the last column.\n"
    )
    print(
        "| Keras backend | mode | decoding call | first call (compiles) "
        "| model built (RSS) | whole process |"
    )
    print("|---|---|---|---|---|---|")
    for backend, by_mode in results.items():
        for mode, r in by_mode.items():
            if r is None:
                print(f"| {backend} | {MODE_NAMES[mode]} | failed | | | |")
                continue
            print(
                f"| {backend} | {MODE_NAMES[mode]} | {r['peak_mib']:,.1f} "
                f"| {r['first_peak_mib']:,.1f} | {r['built_mib']:,.0f} "
                f"| {r['process_peak_mib']:,.0f} |"
            )


def step_table(results):
    """Milliseconds per step: the model's beside the tiny model's."""
    print(
        "\nMilliseconds per decoding step (a call's median time over the steps "
        "it ran), of the model above and of the same model with embedding 8, 8 "
        f"units and {TINY['vocab']} tokens (same sentences, same process, "
        "compiled alike), whose arithmetic takes microseconds: its time per "
        "step is what the backend spends on a step besides the arithmetic "
        "(dispatching ops, running the loop, entering a compiled call).\n"
    )
    print(
        "| Keras backend | greedy | greedy, tiny model | beam 4 | "
        "beam 4, tiny model | tiny / model (greedy / beam 4) |"
    )
    print("|---|---|---|---|---|---|")
    for backend, by_mode in results.items():
        cells, shares = [], []
        for mode in ("greedy", "beam4"):
            r = by_mode.get(mode) or {}
            if "tiny_step_ms" not in r:
                cells += ["", ""]
                continue
            cells += [f"{r['step_ms']:.3f}", f"{r['tiny_step_ms']:.3f}"]
            shares.append(f"{r['tiny_step_ms'] / r['step_ms']:.0%}")
        if shares:
            print(f"| {backend} | {' | '.join(cells)} | {' / '.join(shares)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, choices=BACKENDS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--loop-sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of every worker in turn, the median round per cell (3; 1 quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: JAX only, 16 sentences (2 in the loop), 2 repetitions",
    )
    add_worker_arguments(
        parser, "mode", MODES, "torch: skip the runs with `jit_compile=True`"
    )
    parser.add_argument(
        "--step-by-step",
        action="store_true",
        help="worker: torch `jit_compile=True` with a compiled call a step",
    )
    args = parser.parse_args()
    quick = args.quick
    args.sentences = args.sentences or (16 if quick else 64)
    args.loop_sentences = args.loop_sentences or (2 if quick else 8)
    args.repeats = args.repeats or (2 if quick else 5)
    if args.worker:
        return worker(args)

    args.backends = args.backends or (["jax"] if quick else list(BACKENDS))
    args.rounds = args.rounds or (1 if quick else 3)
    cells = []  # (row, mode, backend, argv) in the order of a round
    for backend in args.backends:
        for mode in args.modes:
            if mode == "pytorch_greedy" and backend != "torch":
                continue
            argv = ["--mode", mode, "--sentences", args.sentences]
            argv += ["--loop-sentences", args.loop_sentences]
            argv += ["--repeats", args.repeats, "--threads", args.threads]
            cells.append((backend, mode, backend, argv))
        if backend == "torch" and not args.eager_only:
            for mode in (m for m in COMPILED_MODES if m in args.modes):
                argv = ["--mode", mode, "--sentences", args.sentences]
                argv += ["--repeats", args.repeats, "--threads", args.threads]
                argv += ["--jit-compile"]
                cells.append((COMPILED_ROW, mode, backend, argv))
                cells.append((STEPS_ROW, mode, backend, argv + ["--step-by-step"]))
    runs = {}
    for _ in range(args.rounds):
        for row, mode, backend, argv in cells:
            run = run_worker(__file__, backend, args.threads, argv)
            runs.setdefault(row, {}).setdefault(mode, []).append(run)
    results = {
        row: {mode: median_round(r) for mode, r in by_mode.items()}
        for row, by_mode in runs.items()
    }
    report(results, args)


if __name__ == "__main__":
    main()
