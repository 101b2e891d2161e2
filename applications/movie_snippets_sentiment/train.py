"""Trains the `movie_snippets_sentiment` preset: a BiGRU attention classifier.

Data: the movie review snippets of Hutto and Gilbert (2014), inside the
vaderSentiment 3.3.2 sdist (MIT), with the canonical split of
`keras_rnnattn.datasets.load_movie_snippets` (test: 1000, validation: 500,
train: 9,068). Evaluates on the test split, and with `--cv` also by 10-fold
cross-validation over all 10,568 snippets.

    python applications/movie_snippets_sentiment/train.py            # the preset
    python applications/movie_snippets_sentiment/train.py --pooling mean
    python applications/movie_snippets_sentiment/train.py --quick    # smoke run
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_rnnattn.datasets import (
    kfold_indices,
    load_movie_snippets,
)
from keras_rnnattn.models import AttentionClassifier
from keras_rnnattn.text import WordTokenizer
from keras_rnnattn.training import BudgetCallbacks, fit_best

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402

NAME = "movie_snippets_sentiment"
LABELS = ["negative", "positive"]
SLICE = 200  # the test slice whose accuracy is stored for the preset tests
PROBE_TEXTS = [
    "a gorgeous, witty, seductive movie.",
    "the plot is dull and the acting is worse.",
    "not as bad as i feared, but not good either.",
]


def parse_args(argv=None):
    parser = common.argument_parser(__doc__, out=os.path.join("saved_models", NAME))
    parser.add_argument(
        "--pooling", default="attention", choices=["attention", "mean", "last"]
    )
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument(
        "--time-budget", type=float, default=60.0, help="training minutes at most"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument(
        "--weight-decay", type=float, default=0.0, help="AdamW decoupled decay"
    )
    parser.add_argument(
        "--cv", action="store_true", help="also run 10-fold cross-validation"
    )
    parser.add_argument(
        "--word-vectors",
        default="none",
        choices=["none", "minilm"],
        help="initialise the embeddings with all-MiniLM-L6-v2's WordPiece vectors "
        "(384-d; sets --embedding-dim 384)",
    )
    args = parser.parse_args(argv)
    if args.word_vectors == "minilm":
        args.embedding_dim = common.MINILM_DIM
    if args.quick:
        args.out = os.path.join(tempfile.mkdtemp(), NAME)
        args.epochs = 1
        args.embedding_dim = common.MINILM_DIM if args.word_vectors == "minilm" else 8
        args.units = 8
    return args


def build(args, train_texts):
    tokenizer = WordTokenizer(lowercase=True, min_count=args.min_count)
    tokenizer.fit(train_texts)
    model = AttentionClassifier(
        tokenizer=tokenizer,
        labels=LABELS,
        embedding_dim=args.embedding_dim,
        units=args.units,
        cell="gru",
        bidirectional=True,
        pooling=args.pooling,
        dropout=args.dropout,
        max_length=80,
    )
    if args.word_vectors == "minilm":
        common.init_word_vectors(model, tokenizer)
    model.compile(
        optimizer=keras.optimizers.AdamW(
            args.learning_rate, weight_decay=args.weight_decay
        )
    )
    return model


def train(args, train_texts, train_labels, val_texts, val_labels, run=False):
    """Fits one model; keeps the weights of the best validation accuracy.

    With `run`, in a training run (`runs.fit_run`: `--init-from`, `--resume`,
    `--minutes`, `--average-last`), as the preset is trained; the folds of
    the cross-validation train without one. Returns `(model, metrics)`."""
    keras.utils.set_random_seed(args.seed)
    model = build(args, train_texts)
    callbacks = BudgetCallbacks(
        args.time_budget,
        patience=2,
        decay_learning_rate=False,
        monitor="val_accuracy",
        mode="max",
        call_minutes=args.minutes if run else None,
    )
    kwargs = dict(
        validation_data=(val_texts, val_labels),
        epochs=args.epochs,
        batch_size=args.batch_size,
        callbacks=callbacks,
        verbose=2,
    )
    if run:
        return model, runs.fit_run(
            args, NAME, model, train_texts, train_labels, **kwargs
        )
    return model, fit_best(model, train_texts, train_labels, **kwargs)


def cross_validate(args):
    texts, labels = load_movie_snippets("all")
    scores = []
    for fold, (train_idx, test_idx) in enumerate(kfold_indices(len(texts))):
        # The last 500 training items of the fold pick the epoch.
        fit_idx, val_idx = train_idx[:-500], train_idx[-500:]
        model, _ = train(
            args,
            [texts[i] for i in fit_idx],
            labels[fit_idx],
            [texts[i] for i in val_idx],
            labels[val_idx],
        )
        scores.append(
            common.accuracy(model, [texts[i] for i in test_idx], labels[test_idx])
        )
        print(f"fold {fold}: accuracy {scores[-1]:.4f}", flush=True)
    return float(np.mean(scores)), float(np.std(scores))


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    (train_texts, train_labels), (val_texts, val_labels), (test_texts, test_labels) = (
        common.load_splits(load_movie_snippets)
    )
    if args.quick:
        train_texts, train_labels = train_texts[:256], train_labels[:256]
        val_texts, val_labels = val_texts[:64], val_labels[:64]
        test_texts, test_labels = test_texts[:SLICE], test_labels[:SLICE]

    model, run = train(args, train_texts, train_labels, val_texts, val_labels, run=True)
    metrics = {
        "test_accuracy": common.accuracy(model, test_texts, test_labels),
        "test_accuracy_first_200": common.accuracy(
            model, test_texts[:SLICE], test_labels[:SLICE]
        ),
        "validation_accuracy": common.accuracy(model, val_texts, val_labels),
        **{key: run[key] for key in ("epochs_run", "train_seconds", "shipped_weights")},
        "training_history": run["training_history"],
    }
    if args.cv and not args.quick:
        mean, std = cross_validate(args)
        metrics["cv10_accuracy_mean"] = mean
        metrics["cv10_accuracy_std"] = std

    _, probe = model.classify(PROBE_TEXTS)
    command = common.command_line(NAME, argv)
    metadata = {
        "description": (
            f"BiGRU ({args.units} units per direction) + {args.pooling} pooling "
            "sentiment classifier (negative/positive) of English movie review "
            "snippets, word-level, "
            + (
                "embeddings initialised with all-MiniLM-L6-v2's WordPiece vectors."
                if args.word_vectors == "minilm"
                else "random embeddings."
            )
        ),
        "data": (
            "Movie review snippets (Pang & Lee sentences rated by Hutto and "
            "Gilbert 2014), vaderSentiment 3.3.2 sdist; canonical split "
            "default_rng(1234): test 1000, validation 500, train 9068."
        ),
        "data_license": "MIT (cite Hutto & Gilbert, ICWSM 2014)",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "probe_texts": PROBE_TEXTS,
        "probe_probabilities": probe.tolist(),
    }
    folder = model.save_to_preset(args.out, metadata=metadata)

    print("\n| preset | pooling | test acc | first 200 | val acc | epochs | train s |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {NAME} | {args.pooling} | {metrics['test_accuracy']:.2%} | "
        f"{metrics['test_accuracy_first_200']:.2%} | "
        f"{metrics['validation_accuracy']:.2%} | {metrics['epochs_run']} | "
        f"{metrics['train_seconds']} |"
    )
    if "cv10_accuracy_mean" in metrics:
        print(
            f"10-fold CV: {metrics['cv10_accuracy_mean']:.2%} "
            f"± {metrics['cv10_accuracy_std']:.2%}"
        )
    print(f"preset: {folder}")
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
