"""Translator decoding speed and peak memory per Keras backend: greedy, beam 4 and 8.

A Translator (bidirectional GRU encoder, Bahdanau attention, GRU decoder;
vocabulary 4k, embedding 128, 256 units, random weights) decodes 64 source
sentences of 15 tokens, at most 20 target tokens each, with

- `Translator.generate_ids` (the batched `keras_rnnattn.decoding` searches, one
  compiled function per setting on JAX and TensorFlow): greedy, beam 4, beam 8;
- a per-sentence beam-4 loop: one sentence at a time, a Python loop over the
  steps calling the same `next_fn` on the 4 hypotheses and choosing them with
  NumPy (how beam search is usually written around a PyTorch seq2seq model).

The untrained model rarely ends a sentence early, so every method does close to
`max_length` steps. Each (backend, mode) runs in a fresh process: build the
model, a first call (which holds the compilation), `--repeats` timed calls
(sentences/s, the median counts), then one more call with an RSS sampler. Memory
is the resident set size (RSS) read from /proc/self/statm by a thread every
millisecond during a call, minus the RSS after the model was built (before any
decoding): the decoding call's peak, and the first call's (compilation
included); and the process's own peak (`ru_maxrss`: imports, model, compiling,
decoding).

    python benchmarks/decode.py
    python benchmarks/decode.py --backends jax --sentences 32
    python benchmarks/decode.py --quick            # a smoke run
"""

import argparse
import json
import time

from _common import MIB, PeakRSS, max_rss_bytes, median, rss_bytes, run_worker

BACKENDS = ("tensorflow", "jax", "torch")
MODES = ("greedy", "beam4", "beam8", "beam4_loop")
MODE_NAMES = {
    "greedy": "greedy (batched)",
    "beam4": "beam 4 (batched)",
    "beam8": "beam 8 (batched)",
    "beam4_loop": "beam 4, per-sentence loop",
}
SIZE = dict(vocab=4000, embedding=128, units=256, source_length=15, max_length=20)


def build_model():
    import keras

    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import WordTokenizer

    keras.utils.set_random_seed(0)
    words = " ".join(f"w{i}" for i in range(SIZE["vocab"] - 4))
    tokenizer = WordTokenizer().fit([words])
    return Translator(
        tokenizer,
        tokenizer,
        embedding_dim=SIZE["embedding"],
        units=SIZE["units"],
        attention="bahdanau",
    )


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


def worker(args):
    import numpy as np

    model = build_model()
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
    print(json.dumps(result))


def report(results, args):
    """The markdown section: speed, then memory."""
    print("## Decoding speed and memory (`benchmarks/decode.py`)\n")
    print(
        f"A Translator (bidirectional GRU encoder, Bahdanau attention, GRU decoder; "
        f"vocabulary 4k, embedding 128, 256 units; random weights) decodes "
        f"{args.sentences} sentences of {SIZE['source_length']} tokens, at most "
        f"{SIZE['max_length']} target tokens, batched with `generate_ids` (greedy, "
        f"beam 4, beam 8; one compiled function per setting on JAX and "
        f"TensorFlow); the per-sentence loop decodes {args.loop_sentences} "
        f"sentences one at a time (a Python loop over the steps around the same "
        f"`next_fn`, choosing the 4 hypotheses with NumPy). One fresh process per "
        f"backend and mode, {args.threads} thread(s). Sentences/s: median of "
        f"{args.repeats} timed calls after a first call that holds the "
        f"compilation."
        + (
            " Smoke run (`--quick`): too few repetitions to trust."
            if args.quick
            else ""
        )
        + "\n"
    )
    print(
        "| Keras backend | greedy (batched) | beam 4 (batched) | beam 8 (batched) "
        "| beam 4, per-sentence loop | beam 4 batched / loop |"
    )
    print("|---|---|---|---|---|---|")
    for backend, by_mode in results.items():
        cells = [
            "failed" if by_mode.get(m) is None else f"{by_mode[m]['rate']:,.2f}"
            for m in MODES
        ]
        batched, loop = by_mode.get("beam4"), by_mode.get("beam4_loop")
        ratio = f"{batched['rate'] / loop['rate']:.1f}x" if batched and loop else ""
        print(f"| {backend} | {' | '.join(cells)} | {ratio} |")

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, choices=BACKENDS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--loop-sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: JAX only, 16 sentences (2 in the loop), 2 repetitions",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    quick = args.quick
    args.sentences = args.sentences or (16 if quick else 64)
    args.loop_sentences = args.loop_sentences or (2 if quick else 8)
    args.repeats = args.repeats or (2 if quick else 5)
    if args.worker:
        return worker(args)

    args.backends = args.backends or (["jax"] if quick else list(BACKENDS))
    results = {}
    for backend in args.backends:
        results[backend] = {}
        for mode in args.modes:
            argv = ["--mode", mode, "--sentences", args.sentences]
            argv += ["--loop-sentences", args.loop_sentences]
            argv += ["--repeats", args.repeats, "--threads", args.threads]
            results[backend][mode] = run_worker(__file__, backend, args.threads, argv)
    report(results, args)


if __name__ == "__main__":
    main()
