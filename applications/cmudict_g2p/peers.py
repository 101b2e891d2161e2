"""Scores the `g2p-en` package's neural model on the `cmudict_g2p` test words.

g2p-en (Park & Kim, Apache-2.0; `pip install g2p-en`) looks words up in
CMUdict and predicts only the words it lacks, with a GRU encoder-decoder
without attention (128 units, greedy decoding) trained on CMUdict. Looking
the test words up would score the dictionary itself, so this calls its
network (`G2p.predict`) on every word, the path its unknown words take. It
was trained on its own split of CMUdict, so it may have seen some of these
test words in training: its numbers are a lower bound on its error.

    python applications/cmudict_g2p/peers.py            # the 12,000 test words
    python applications/cmudict_g2p/peers.py --limit 500

With `--into saved_models/cmudict_g2p` the scores are written into that
preset's metadata (`metrics["peers"]`), with, given `--baseline FOLDER`, the
test metrics of the same recipe run without attention (`train.py --attention
none --out FOLDER`), as `no_attention_test_*`, and given `--monotonic FOLDER`,
those of the run with monotonic attention (`train.py --attention
bahdanau_monotonic --out FOLDER`), as `monotonic_test_*`.
"""

import argparse
import json
import sys
import time
import types
from pathlib import Path

from keras_rnnattn.datasets import DatasetNotFoundError, load_cmudict
from keras_rnnattn.training import update_metadata

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/peers.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.cmudict_g2p.train import error_rates  # noqa: E402


def load_g2p_en():
    """g2p-en's `G2p`, with its CMUdict lookup table left empty.

    Only `G2p.predict`, the network, is scored; its table comes from nltk's
    downloadable corpus, which is not needed for that (and not there offline).
    """
    try:
        import g2p_en.g2p as module
    except ImportError as error:
        raise ImportError(
            "The peer needs g2p-en: pip install g2p-en (or pip install '.[peers]')."
        ) from error
    module.cmudict = types.SimpleNamespace(dict=dict)
    return module.G2p()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["validation", "test"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--into", default=None, help="a preset folder to update")
    parser.add_argument("--baseline", default=None, help="the no-attention preset")
    parser.add_argument(
        "--monotonic", default=None, help="the monotonic-attention preset"
    )
    args = parser.parse_args(argv)
    try:
        words, pronunciations = load_cmudict(args.split)
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    words = words[: args.limit]
    pronunciations = pronunciations[: args.limit]
    g2p = load_g2p_en()
    start = time.time()
    outputs = [" ".join(g2p.predict(word)) for word in words]
    seconds = time.time() - start
    result = {
        "system": "g2p-en 2.1.0, G2p.predict (its network, greedy)",
        "split": args.split,
        "words": len(words),
        **error_rates(words, outputs, pronunciations),
        "words_per_second": round(len(words) / seconds, 1),
        "words_with_apostrophe": sum("'" in w for w in words),
    }
    print(json.dumps(result))
    if args.into:
        update_metadata(
            args.into,
            {"peers": {"g2p_en": result}},
            runs={"no_attention": args.baseline, "monotonic": args.monotonic},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
