"""Trains the `punctuation_en` preset: punctuation and capitals for modern English.

Data: nine kinds of English text (`corpus.SOURCES`: technical
documentation, help pages, everyday text and dialogue, news, opinion,
reviews, the Bible, chat dialogue and a FAQ), each split by document (5%
test, 5% validation) and capped at 400,000 training words. Each split of
each source is read as running text and turned into lowercase words with
one tag each by `keras_rnnattn.text.punctuation_tags` (Tilk & Alumäe 2016's
COMMA, PERIOD and QUESTION after the word, and its case): what a speech
recogniser emits.
Input: SentencePiece subwords (`--vocabulary-size`, lowercase), each word
encoded on its own, so that a word never seen keeps its pieces; a word's
first piece carries its case and its last piece its mark
(`keras_rnnattn.text.word_pieces`). Examples are windows of `--window`
words, starting every half window.
Model: a `SequenceTagger` (Tilk & Alumäe 2016's bidirectional GRU with
attention): subword embeddings, BiGRU, self-attention over its states
(`scaled_general`), softmax over the 12 tags from [h_i; c_i]; `--attention
none` trains the same tagger without attention (the baseline).
Training: cross-entropy, Adam with an exponential moving average of the
weights, the learning rate decayed linearly over `--time-budget`.
Evaluation: per-class precision, recall and F1 of each source's test text,
restored as a user gets it: `PunctuationStream`'s overlapping windows, each
word decided by the window where it is central.

    python applications/punctuation_en/train.py                   # the preset
    python applications/punctuation_en/train.py --attention none  # baseline
    python applications/punctuation_en/train.py --quick           # smoke run
"""

import os
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_rnnattn.layers.score_layers import NO_ATTENTION, SELF_ATTENTION_SCORES
from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import PUNCTUATION_TAGS, SentencePieceTokenizer
from keras_rnnattn.text.word_pieces import piece_tags, word_piece_ids
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402
from applications.punctuation_en import corpus  # noqa: E402

NAME = "punctuation_en"


def parse_args(argv=None):
    parser = common.argument_parser(__doc__)
    parser.add_argument(
        "--attention",
        default="scaled_general",
        choices=(*SELF_ATTENTION_SCORES, NO_ATTENTION),
    )
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--units", type=int, default=160)
    parser.add_argument("--window", type=int, default=64, help="words a window")
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument(
        "--max-train-words",
        type=int,
        default=corpus.MAX_TRAIN_WORDS,
        help="training words a source at most",
    )
    parser.add_argument(
        "--mark-weights",
        type=float,
        default=0.0,
        help="weigh each piece's loss by (pieces with no mark / pieces with its "
        "mark) to this power, so that rare marks (questions) do not drown; 0: off",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--ema", type=float, default=0.999, help="0: off")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=55.0, help="training minutes at most"
    )
    common.add_preset_options(parser)
    args = parser.parse_args(argv)
    args.ema = args.ema or None
    if args.out is None:
        name = NAME if args.attention != "none" else f"{NAME}_none"
        args.out = os.path.join("saved_models", name)
        if args.quick:
            args.out = os.path.join(tempfile.mkdtemp(), name)
    if args.quick:
        args.vocabulary_size, args.embedding_dim, args.units = 300, 8, 8
        args.window, args.epochs = 16, 1
    return args


def window_arrays(tokenizer, parts, window, stride, max_length):
    """Piece ids and piece tag ids `(N, max_length)` of windows of `window` words.

    `parts` is a list of `(words, tags)`, each read as its own running text.
    """
    index = {tag: i for i, tag in enumerate(PUNCTUATION_TAGS)}
    rows = []
    for words, tags in parts:
        pieces = word_piece_ids(tokenizer, words)
        for start in range(0, max(len(words) - window // 4, 1), stride):
            chunk = pieces[start : start + window]
            ids = [i for p in chunk for i in p][:max_length]
            labels = piece_tags([len(p) for p in chunk], tags[start : start + window])
            rows.append((ids, [index[t] for t in labels[:max_length]]))
    x = np.zeros((len(rows), max_length), "int32")
    y = np.zeros((len(rows), max_length), "int32")
    for i, (ids, labels) in enumerate(rows):
        x[i, : len(ids)], y[i, : len(labels)] = ids, labels
    return x, y


def mark_weights(y, power):
    """Per-piece loss weights `(N, S)`: `(n_O / n_mark) ** power` for the mark
    of each piece's tag (`PUNCTUATION_TAGS` ids in `y`), counted over the
    pieces of `y` (padding, id 0 at the end, counts as no mark: the model's
    mask leaves it out of the loss anyway).

    Example:

    >>> y = np.array([[0, 1, 2, 3]])  # lower_O, lower_COMMA, lower_PERIOD, ...
    >>> mark_weights(np.concatenate([y, np.zeros((1, 4), int)], 1), 1.0)[0, :4]
    array([1., 5., 5., 5.], dtype=float32)
    """
    marks = np.array([PUNCTUATION_TAGS.index(t) % 4 for t in PUNCTUATION_TAGS])
    mark_of = marks[y]  # (N, S): 0 none, 1 comma, 2 full stop, 3 question
    counts = np.bincount(mark_of.ravel(), minlength=4).astype("float64")
    weights = (counts[0] / np.maximum(counts, 1.0)) ** power
    return weights[mark_of].astype("float32")


def build(args, train_parts):
    tokenizer = SentencePieceTokenizer(
        vocabulary_size=args.vocabulary_size, lowercase=True
    ).fit(  # SentencePiece reads sentences of at most 4,192 bytes: lines of 64 words
        [" ".join(w[i : i + 64]) for w, _ in train_parts for i in range(0, len(w), 64)]
    )
    return SequenceTagger(
        tokenizer=tokenizer,
        tags=list(PUNCTUATION_TAGS),
        embedding_dim=args.embedding_dim,
        units=args.units,
        score=None if args.attention == "none" else args.attention,
        dropout=args.dropout,
        max_length=2 * args.window,
    )


def train(args, data):
    """Builds and trains the tagger; returns `(model, training metrics)`."""
    keras.utils.set_random_seed(args.seed)
    train_parts = list(data["train"].values())
    model = build(args, train_parts)
    model.compile(optimizer=adam_with_ema(args.learning_rate, ema=args.ema))
    x, y = window_arrays(
        model.tokenizer, train_parts, args.window, args.window // 2, model.max_length
    )
    val = window_arrays(
        model.tokenizer,
        list(data["validation"].values()),
        args.window,
        args.window,
        model.max_length,
    )
    print(f"{len(x):,} training windows, {int((x > 0).sum()):,} pieces", flush=True)
    weights = mark_weights(y, args.mark_weights) if args.mark_weights else None
    metrics = runs.fit_run(
        args,
        NAME,
        model,
        x,
        y,
        sample_weight=weights,
        batch_size=args.batch_size,
        validation_data=val,
        epochs=args.epochs,
        callbacks=BudgetCallbacks(
            args.time_budget,
            call_minutes=args.minutes,
            patience=args.patience,
            swap_ema=bool(args.ema),
        ),
        verbose=2,
    )
    metrics["mark_weights"] = args.mark_weights
    # Saved before it is scored: `--from-preset` scores it again.
    model.save_to_preset(args.out, metadata={"metrics": metrics, "command": ""})
    return model, metrics


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    data = corpus.tagged_splits(quick=args.quick, max_train_words=args.max_train_words)
    model, metrics, command = common.trained_or_reloaded(
        args, NAME, argv, SequenceTagger, lambda: train(args, data)
    )
    # Imported once trained, so that a long run scores with the newest code.
    from applications.punctuation_en import evaluation

    metadata = evaluation.metadata(model, args, data, metrics, command)
    folder = model.save_to_preset(
        args.out, metadata=metadata, weights_dtype="float16" if args.float16 else None
    )
    evaluation.report(model, metadata)
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
