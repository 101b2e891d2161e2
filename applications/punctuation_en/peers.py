"""Scores the peers of `punctuation_en` on its held-out documents, per source.

- **CRF**: a linear-chain conditional random field (`sklearn-crfsuite`) with
  the word-window features of `applications/web_bible_punctuation/peers.py`,
  trained on the same training words of the same sources (non-overlapping
  windows of `--window` words; it reads whole words, every training word).
- **web_bible_punctuation**: the Bible-only word tagger, with its own windows
  (`--bible-preset`: no longer shipped; `applications/web_bible_punctuation/train.py`
  writes it into its default folder).
- **no attention**: the same recipe run with `--attention none` (`--baseline`).

Every system's tags go through the same sentence rules
(`keras_rnnattn.models.punctuation_stream.sentence_tags`) and the same
scores (`evaluation.score_sources`).

    python applications/punctuation_en/peers.py --into saved_models/punctuation_en \\
        --baseline /tmp/punctuation_en_none
    python applications/punctuation_en/peers.py --limit 20000   # quick
"""

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.punctuation_en import corpus, evaluation  # noqa: E402
from applications.web_bible_punctuation.peers import (  # noqa: E402
    load_crf,
    word_features,
)
from keras_rnnattn.datasets import DatasetNotFoundError  # noqa: E402
from keras_rnnattn.metrics import punctuation_scores  # noqa: E402
from keras_rnnattn.models.punctuation_stream import sentence_tags  # noqa: E402
from keras_rnnattn.training import update_metadata  # noqa: E402


def windows(words, length):
    return [words[i : i + length] for i in range(0, len(words), length)]


def crf_scores(crf, test, length):
    """`evaluation.score_sources`'s scores of the CRF."""
    out, every_predicted, every_true = {}, [], []
    for name, (words, true) in test.items():
        predicted = []
        for chunk in windows(words, length):
            features = [word_features(chunk, i) for i in range(len(chunk))]
            predicted += crf.predict_single(features)
        predicted = sentence_tags(predicted, True, False)[0]
        scores = evaluation.rounded(punctuation_scores(predicted, true))
        scores["case_accuracy"] = round(evaluation.case_accuracy(predicted, true), 2)
        scores["words"] = len(words)
        out[name] = scores
        every_predicted += predicted
        every_true += true
    scores = evaluation.rounded(punctuation_scores(every_predicted, every_true))
    scores["case_accuracy"] = round(
        evaluation.case_accuracy(every_predicted, every_true), 2
    )
    scores["words"] = len(every_true)
    out["all"] = scores
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--c1", type=float, default=0.1, help="L1 penalty")
    parser.add_argument("--c2", type=float, default=0.01, help="L2 penalty")
    parser.add_argument("--max-iterations", type=int, default=150)
    parser.add_argument("--limit", type=int, default=None, help="words a source")
    parser.add_argument("--into", default=None, help="a preset folder to update")
    parser.add_argument("--baseline", default=None, help="the no-attention preset")
    parser.add_argument("--bible-preset", default="saved_models/web_bible_punctuation")
    parser.add_argument(
        "--json", default=None, help="peer scores: read if there, else written"
    )
    args = parser.parse_args(argv)
    if args.json and Path(args.json).exists():
        peers = json.loads(Path(args.json).read_text())
        return _write(peers, args)
    try:
        data = corpus.tagged_splits()
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    train = [(w[: args.limit], t[: args.limit]) for w, t in data["train"].values()]
    texts, tags = [], []
    for words, word_tags in train:
        for i in range(0, len(words), args.window):
            chunk = words[i : i + args.window]
            texts.append([word_features(chunk, j) for j in range(len(chunk))])
            tags.append(word_tags[i : i + args.window])
    crf = load_crf(
        algorithm="lbfgs",
        c1=args.c1,
        c2=args.c2,
        max_iterations=args.max_iterations,
        all_possible_transitions=True,
    )
    start = time.time()
    crf.fit(texts, tags)
    train_seconds = time.time() - start
    peers = {
        "crf": {
            "system": f"sklearn-crfsuite CRF (lbfgs, c1 {args.c1}, c2 {args.c2}, "
            f"{args.max_iterations} iterations at most), word-window features",
            "training_words": sum(len(w) for w, _ in train),
            "train_seconds": round(train_seconds, 1),
            "features": len(crf.state_features_),
            "test": crf_scores(crf, data["test"], args.window),
        }
    }
    if args.bible_preset and Path(args.bible_preset).exists():
        from keras_rnnattn.models import SequenceTagger

        bible = SequenceTagger.from_preset(args.bible_preset)
        peers["web_bible_punctuation"] = {
            "system": "the web_bible_punctuation preset (Bible only, word vocabulary)",
            "test": evaluation.score_sources(bible, data["test"]),
        }
    if args.json:
        Path(args.json).write_text(json.dumps(peers, indent=1))
    return _write(peers, args)


def _write(peers, args):
    for name, peer in peers.items():
        print(name)
        print(evaluation.score_table(peer["test"]))
    print(json.dumps({n: p["test"]["all"]["overall"]["f1"] for n, p in peers.items()}))
    if args.into:
        update_metadata(
            args.into, {"peers": peers}, runs={"no_attention": args.baseline}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
