"""Scores espeak-ng, through misaki's own fallback, on the misaki G2P test words.

misaki hands the words its lexicon lacks to a fallback; the one it ships is
`misaki.espeak.EspeakFallback` (espeak-ng from the `espeakng-loader` wheel
through `phonemizer-fork`; GPL, measured here, never a dependency of the
package). `version="2.0"` keeps flaps as `ɾ`, as in the lexicon. Every test word
goes through the fallback, the path an unknown word takes. `--dialect gb`
scores espeak-ng's British voice (`EspeakFallback(british=True)`) on the
`misaki_gb_g2p` test words.

    pip install misaki==0.9.4 espeakng-loader phonemizer-fork
    python applications/misaki_us_g2p/peers.py                 # the test words
    python applications/misaki_us_g2p/peers.py --limit 500
    python applications/misaki_us_g2p/peers.py --dialect gb
"""

import argparse
import json
import sys
import time
from pathlib import Path

from keras_rnnattn.datasets import DatasetNotFoundError, load_misaki_lexicon

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/peers.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.misaki_us_g2p.train import error_rates  # noqa: E402


def load_espeak_fallback(british=False):
    """misaki's `EspeakFallback(british=british, version="2.0")` and its token type."""
    try:
        from misaki.espeak import EspeakFallback
        from misaki.token import MToken
    except ImportError as error:
        raise ImportError(
            "The peer needs misaki and espeak-ng: pip install misaki==0.9.4 "
            "espeakng-loader phonemizer-fork (or pip install '.[peers]')."
        ) from error
    return EspeakFallback(british=british, version="2.0"), MToken


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["validation", "test"])
    parser.add_argument("--dialect", default="us", choices=["us", "gb"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", default=None, help="a JSON file for the scores")
    args = parser.parse_args(argv)
    try:
        words, phonemes = load_misaki_lexicon(args.split, dialect=args.dialect)
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    words, phonemes = words[: args.limit], phonemes[: args.limit]
    fallback, token = load_espeak_fallback(british=args.dialect == "gb")
    start = time.time()
    outputs = [fallback(token(text=w, tag="NN", whitespace=""))[0] or "" for w in words]
    seconds = time.time() - start
    result = {
        "system": "espeak-ng through misaki.espeak.EspeakFallback("
        f"british={args.dialect == 'gb'}, version='2.0')",
        "dialect": args.dialect,
        "split": args.split,
        "words": len(words),
        **error_rates(outputs, phonemes),
        "ms_per_word": round(1000 * seconds / len(words), 3),
    }
    print(json.dumps(result, ensure_ascii=False))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
