"""Trains and scores the CRF peer of the `web_bible_punctuation` preset.

A linear-chain conditional random field (`sklearn-crfsuite`, Okazaki's
CRFsuite; `pip install sklearn-crfsuite`) over the same windows of the same
split as the tagger (`train.py`): each word's features are the standard word
window of CRF taggers (the words at -2..+2, the bigrams around the word, its
3-letter prefix and suffix, whether it is numeric, and the window's edges),
lowercase like the input; no case features, since the input has none. It
predicts the same 12 tags and is scored by the same
`keras_rnnattn.metrics.punctuation_scores`. It sees every training word (the
tagger reads 8,000 and one unknown token) and trains on the non-overlapping
windows (the tagger also sees them shifted by half a window).

    python applications/web_bible_punctuation/peers.py
    python applications/web_bible_punctuation/peers.py --limit 20000   # quick

With `--into saved_models/web_bible_punctuation` the scores are written into
that preset's metadata (`metrics["peers"]["crf"]`), with, given `--baseline
FOLDER`, the test metrics of the same recipe run without attention
(`train.py --attention none --out FOLDER`), as `no_attention_*`.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from keras_rnnattn.datasets import DatasetNotFoundError
from keras_rnnattn.metrics import punctuation_scores
from keras_rnnattn.text import punctuation_windows
from keras_rnnattn.training import update_metadata

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/peers.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.web_bible_punctuation.train import (  # noqa: E402
    rounded,
    score_table,
    tagged_words,
)


def word_features(words, i):
    """The CRF features of `words[i]` within its window."""
    word = words[i]
    features = {
        "bias": 1.0,
        "w": word,
        "prefix3": word[:3],
        "suffix3": word[-3:],
        "suffix2": word[-2:],
        "numeric": word.isdigit(),
    }
    for offset in (-2, -1, 1, 2):
        j = i + offset
        features[f"w{offset:+d}"] = words[j] if 0 <= j < len(words) else "<edge>"
    features["w-1|w"] = f"{features['w-1']}|{word}"
    features["w|w+1"] = f"{word}|{features['w+1']}"
    if i == 0:
        features["first"] = True
    if i == len(words) - 1:
        features["last"] = True
    return features


def window_features(text):
    words = text.split(" ")
    return [word_features(words, i) for i in range(len(words))]


def load_crf(**kwargs):
    try:
        import sklearn_crfsuite
    except ImportError as error:
        raise ImportError(
            "The peer needs sklearn-crfsuite: pip install sklearn-crfsuite "
            "(or pip install '.[peers]')."
        ) from error
    return sklearn_crfsuite.CRF(**kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-length", type=int, default=100)
    parser.add_argument("--c1", type=float, default=0.1, help="L1 penalty")
    parser.add_argument("--c2", type=float, default=0.01, help="L2 penalty")
    parser.add_argument("--max-iterations", type=int, default=150)
    parser.add_argument(
        "--limit", type=int, default=None, help="training words at most (quick)"
    )
    parser.add_argument("--into", default=None, help="a preset folder to update")
    parser.add_argument("--baseline", default=None, help="the no-attention preset")
    args = parser.parse_args(argv)
    try:
        train_data = tagged_words("train")
        test_data = tagged_words("test")
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    train_data = tuple(part[: args.limit] for part in train_data)
    texts, tags = plain_windows(train_data, args.max_length)
    test_texts, test_tags = plain_windows(test_data, args.max_length)
    crf = load_crf(
        algorithm="lbfgs",
        c1=args.c1,
        c2=args.c2,
        max_iterations=args.max_iterations,
        all_possible_transitions=True,
    )
    start = time.time()
    crf.fit([window_features(t) for t in texts], tags)
    train_seconds = time.time() - start
    start = time.time()
    predicted = crf.predict([window_features(t) for t in test_texts])
    seconds = time.time() - start
    result = {
        "system": "sklearn-crfsuite CRF (lbfgs, "
        f"c1 {args.c1}, c2 {args.c2}, {args.max_iterations} iterations at most), "
        "word-window features",
        "training_words": len(train_data[0]),
        "train_seconds": round(train_seconds, 1),
        "test_words": len(test_data[0]),
        "test_words_per_second": round(len(test_data[0]) / seconds, 1),
        "features": len(crf.state_features_),
        "test": rounded(punctuation_scores(predicted, test_tags)),
    }
    print(json.dumps(result))
    print(score_table([("CRF", result["test"])], first="system"))
    if args.into:
        update_metadata(
            args.into, {"peers": {"crf": result}}, runs={"no_attention": args.baseline}
        )
    return 0


def plain_windows(data, length):
    """The recipe's non-overlapping windows, their words joined by single
    spaces (the CRF reads words, not texts)."""
    words, tags = data
    texts, tag_lists = punctuation_windows(words, tags, length)
    out, start = [], 0
    for row in tag_lists:
        out.append(" ".join(words[start : start + len(row)]))
        start += len(row)
    return out, tag_lists


if __name__ == "__main__":
    sys.exit(main())
