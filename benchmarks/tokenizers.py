"""Tokenizer fit and encode speed: `BpeTokenizer` beside `SentencePieceTokenizer`.

On the Ding de-en training split (both sides, 30,140 sentences), at
vocabularies of 2,000 (the Ding presets' size) and 8,000: the time of `fit` on
every sentence, the time of `encode` (one call per sentence, as the models read
texts) on 20,000 of them (the first 10,000 German and 10,000 English), the
tokens per sentence, and how many of the 20,000 come back unchanged from
`decode(encode(s))`. `BpeTokenizer` keeps a cache of encoded words: its encode
is timed cold (a tokenizer just rebuilt from its config, as after loading) and
warm (the same text again). Each measurement is repeated, the tokenizers
interleaved, and the median is shown. One thread (SentencePiece trains with
`num_threads=1`).

    python benchmarks/tokenizers.py [--repeats 3] [--quick]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import log  # noqa: E402
from keras_rnnattn.datasets import DatasetNotFoundError, load_ding_de_en  # noqa: E402
from keras_rnnattn.text import BpeTokenizer, SentencePieceTokenizer  # noqa: E402

VOCABULARIES = (2000, 8000)
KINDS = {
    "BpeTokenizer": lambda size: BpeTokenizer(max_vocab=size),
    "SentencePiece bpe": lambda size: SentencePieceTokenizer(
        vocabulary_size=size, model_type="bpe"
    ),
    "SentencePiece unigram": lambda size: SentencePieceTokenizer(
        vocabulary_size=size, model_type="unigram"
    ),
}


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def encode_all(tokenizer, texts):
    return [tokenizer.encode(text) for text in texts]


def measure(kind, size, fit_texts, texts):
    """One repeat: fit, cold and warm encode times, tokens, round trips."""
    fit_s, tokenizer = timed(lambda: KINDS[kind](size).fit(fit_texts))
    fresh = type(tokenizer).from_config(tokenizer.get_config())  # no word cache
    cold_s, ids = timed(lambda: encode_all(fresh, texts))
    warm_s, _ = timed(lambda: encode_all(fresh, texts))
    restored = sum(fresh.decode(row) == text for row, text in zip(ids, texts))
    return {
        "fit": fit_s,
        "cold": cold_s,
        "warm": warm_s,
        "tokens": sum(map(len, ids)) / len(ids),
        "restored": restored,
        "size": tokenizer.vocabulary_size,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke run: 2,000 pairs")
    args = parser.parse_args(argv)
    try:
        pairs = load_ding_de_en("train")
    except DatasetNotFoundError as error:
        print(f"Skipped: {error}")
        return 0
    if args.quick:
        pairs, args.repeats = pairs[:2000], 1
    fit_texts = [de for de, _ in pairs] + [en for _, en in pairs]
    half = min(10_000, len(pairs))
    texts = [de for de, _ in pairs[:half]] + [en for _, en in pairs[:half]]

    start = time.time()
    runs = {}
    for size in VOCABULARIES:
        for repeat in range(args.repeats):
            for kind in KINDS:
                log(f"vocabulary {size}, repeat {repeat + 1}: {kind}")
                runs.setdefault((size, kind), []).append(
                    measure(kind, size, fit_texts, texts)
                )
    minutes = (time.time() - start) / 60

    print(
        "## Tokenizers: BpeTokenizer beside SentencePiece (`benchmarks/tokenizers.py`)\n"
    )
    print(
        f"Fitted on both sides of the Ding de-en training split ({len(fit_texts):,} "
        f"sentences); encode: one `encode` call per sentence on {len(texts):,} "
        f"sentences (the first {half:,} German and English); seconds, median of "
        f"{args.repeats} interleaved repeats, one thread. BpeTokenizer's encode "
        "cold (rebuilt from its config, as after loading) and warm (its word "
        "cache filled); SentencePiece has no cache. Round trip: sentences with "
        "`decode(encode(s)) == s`. Ratios: BpeTokenizer's time over SentencePiece "
        "bpe's.\n"
    )
    print(
        "| vocabulary | tokenizer | size | fit s | encode cold s | encode warm s "
        "| tokens / sentence | round trip |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size in VOCABULARIES:
        medians = {}
        for kind in KINDS:
            rows = runs[(size, kind)]
            medians[kind] = {
                key: statistics.median(row[key] for row in rows) for key in rows[0]
            }
        base = medians["SentencePiece bpe"]
        for kind, m in medians.items():
            ratio = kind == "BpeTokenizer"
            fit = f"{m['fit']:.2f}" + (
                f" ({m['fit'] / base['fit']:.1f}×)" if ratio else ""
            )
            cold = f"{m['cold']:.2f}" + (
                f" ({m['cold'] / base['cold']:.1f}×)" if ratio else ""
            )
            warm = f"{m['warm']:.2f}" + (
                f" ({m['warm'] / base['warm']:.1f}×)" if ratio else ""
            )
            print(
                f"| {size:,} | {kind} | {int(m['size']):,} | {fit} | {cold} | {warm} "
                f"| {m['tokens']:.1f} | {int(m['restored']):,} / {len(texts):,} |"
            )
    load = os.getloadavg()[0]
    print(
        f"\n_Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in "
        f"{minutes:.1f} minutes; load average {load:.1f} at the end._"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
