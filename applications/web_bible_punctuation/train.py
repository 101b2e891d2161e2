"""Trains the `web_bible_punctuation` preset: punctuation and capitals for lowercase words.

Data: the World English Bible (public domain; Debian `sword-text-web`), with
the canonical split of `keras_rnnattn.datasets.load_world_english_bible`
(blocks of 100 verses: test 5%, validation 5%, train 90%). Each split is read
as one running text, verse after verse, and turned into lowercase words with
one tag each by `keras_rnnattn.text.punctuation_tags`: the punctuation class
that follows the word (Tilk & Alumäe 2016: COMMA for , : and dashes, PERIOD
for . ! ;, QUESTION, or O) and its case (lower, title, upper). The input is
what a speech recogniser emits: no punctuation, no capitals, no verse breaks.
Examples are windows of `--max-length` consecutive words; training windows
start every half window, so each word is seen in two contexts.
Model: a `SequenceTagger` (Tilk & Alumäe 2016's bidirectional GRU with
attention): word embeddings, BiGRU, self-attention over the BiGRU states
(`scaled_general`), softmax over the 12 tags from [h_i; c_i]. `--attention
none` trains the same tagger without the attention (the baseline).
Training: cross-entropy, Adam with an exponential moving average of the
weights, the learning rate decayed linearly over `--time-budget`.
Evaluation: per-class precision, recall and F1 on the test split's
non-overlapping windows (`keras_rnnattn.metrics.punctuation_scores`).

    python applications/web_bible_punctuation/train.py                   # the preset
    python applications/web_bible_punctuation/train.py --attention none  # baseline
    python applications/web_bible_punctuation/train.py --quick           # smoke run
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from keras_rnnattn.datasets import load_world_english_bible
from keras_rnnattn.layers.score_layers import NO_ATTENTION, SELF_ATTENTION_SCORES
from keras_rnnattn.metrics import punctuation_scores
from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    WordTokenizer,
    punctuation_tags,
    punctuation_windows,
)
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402

NAME = "web_bible_punctuation"
SLICE = 20  # the test windows whose outputs are pinned by the preset tests
PROBE_TEXTS = [
    "in the beginning god created the heavens and the earth",
    "where are you going he asked and she said to the city of david",
    "hello mr smith how are you today i am fine thank you",
]
CLASSES = ("COMMA", "PERIOD", "QUESTION", "overall", "title", "upper", "case_overall")


def parse_args(argv=None):
    parser = common.argument_parser(__doc__)
    parser.add_argument(
        "--attention",
        default="scaled_general",
        choices=(*SELF_ATTENTION_SCORES, NO_ATTENTION),
    )
    parser.add_argument("--max-vocab", type=int, default=8000)
    parser.add_argument("--embedding-dim", type=int, default=96)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=100)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--ema", type=float, default=0.999, help="0: off")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=40.0, help="training minutes at most"
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
        args.max_vocab, args.embedding_dim, args.units = 300, 8, 8
        args.max_length, args.epochs = 20, 1
    return args


def tagged_words(split):
    """The lowercase words of one split of the Bible and their tags."""
    return punctuation_tags(load_world_english_bible(split))


def tag_windows(model, texts, batch_size=256):
    """The predicted tags of each window (one per word)."""
    ids, _ = model.preprocess_samples(texts, None, owner="tag_windows")
    probs = model.predict(ids, batch_size=batch_size, verbose=0)  # (N, S, 12)
    predicted = np.argmax(probs, axis=-1)  # (N, S)
    lengths = (ids != model.pad_id).sum(axis=1)
    return [[model.tags[j] for j in row[:n]] for row, n in zip(predicted, lengths)]


def rounded(scores):
    """`punctuation_scores` with percentages to two decimals."""
    return {
        name: {k: round(v, 2) if isinstance(v, float) else v for k, v in s.items()}
        for name, s in scores.items()
    }


def score_table(rows, first="preset"):
    """A Markdown table of per-class P / R / F1, one row per model."""
    lines = [
        f"| {first} | " + " | ".join(f"{c} P / R / F1" for c in CLASSES) + " |",
        "|---|" + "---|" * len(CLASSES),
    ]
    for label, scores in rows:
        cells = [
            "{precision:.1f} / {recall:.1f} / {f1:.1f}".format(**scores[c])
            for c in CLASSES
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe(args):
    attention = (
        "no attention (each tag from the BiGRU state alone)"
        if args.attention == "none"
        else f"self-attention over the BiGRU states ({args.attention})"
    )
    return (
        "English punctuation and capitalisation restoration: lowercase words "
        "without punctuation in, each word's following punctuation (comma, "
        "period, question mark or none) and case out (12 tags, "
        f"PUNCTUATION_TAGS). Word embeddings {args.embedding_dim} "
        f"({args.max_vocab:,} words), BiGRU ({args.units} per direction), "
        f"{attention}, dropout {args.dropout}"
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + f"; windows of {args.max_length} words."
    )


def train(args, train_data, val_data):
    """Builds and trains the tagger; returns `(model, training metrics)`."""
    keras.utils.set_random_seed(args.seed)
    texts, tags = punctuation_windows(
        *train_data, args.max_length, args.max_length // 2
    )
    tokenizer = WordTokenizer(lowercase=True, max_vocab=args.max_vocab).fit(texts)
    model = SequenceTagger(
        tokenizer=tokenizer,
        tags=list(PUNCTUATION_TAGS),
        embedding_dim=args.embedding_dim,
        units=args.units,
        score=None if args.attention == "none" else args.attention,
        dropout=args.dropout,
        max_length=args.max_length,
    )
    model.compile(optimizer=adam_with_ema(args.learning_rate, ema=args.ema))
    x, y = model.preprocess_samples(texts, tags, owner="train")
    val = model.preprocess_samples(
        *punctuation_windows(*val_data, args.max_length), owner="validation"
    )
    metrics = runs.fit_run(
        args,
        NAME,
        model,
        x,
        y,
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
    return model, metrics


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    train_data, val_data, test_data = common.load_splits(tagged_words)
    if args.quick:
        train_data = tuple(part[:3000] for part in train_data)
        val_data = tuple(part[:400] for part in val_data)
        test_data = tuple(part[:400] for part in test_data)
    model, metrics, command = common.trained_or_reloaded(
        args, NAME, argv, SequenceTagger, lambda: train(args, train_data, val_data)
    )
    texts, true_tags = punctuation_windows(*test_data, args.max_length)
    start = time.time()
    predicted = tag_windows(model, texts)
    seconds = time.time() - start
    test = rounded(punctuation_scores(predicted, true_tags))
    metrics["test"] = test
    # Flat copies of the headline numbers (`keras-rnnattn presets` shows the first).
    metrics["test_overall_f1"] = test["overall"]["f1"]
    metrics["test_case_overall_f1"] = test["case_overall"]["f1"]
    metrics["test_words"] = len(test_data[0])
    metrics["test_words_per_second"] = round(len(test_data[0]) / seconds, 1)
    val_texts, val_tags = punctuation_windows(*val_data, args.max_length)
    metrics["validation_overall_f1"] = round(
        punctuation_scores(tag_windows(model, val_texts), val_tags)["overall"]["f1"], 2
    )

    metadata = {
        "description": describe(args),
        "data": "The World English Bible (eBible.org, SWORD module engWEB2015eb): "
        f"{len(train_data[0]):,} training words, {len(val_data[0]):,} validation "
        f"words, {len(test_data[0]):,} test words (load_world_english_bible's "
        "split, tags from punctuation_tags).",
        "data_license": "World English Bible: public domain",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "metric_notes": "per-class precision, recall and F1 (%) of the punctuation "
        "after each word and of its case on the test split's windows of "
        f"{args.max_length} words; overall: micro average over COMMA, PERIOD and "
        "QUESTION (keras_rnnattn.metrics.punctuation_scores)",
        "probe_texts": PROBE_TEXTS,
        "probe_restored": model.restore_punctuation(PROBE_TEXTS),
        "test_slice_texts": texts[:SLICE],
        "test_slice_restored": model.restore_punctuation(texts[:SLICE]),
    }
    folder = model.save_to_preset(
        args.out, metadata=metadata, weights_dtype="float16" if args.float16 else None
    )
    print(score_table([(os.path.basename(folder), test)]))
    print(
        f"training: {metrics['epochs_run']} epochs, "
        f"{metrics['train_seconds'] / 60:.1f} min, {metrics['parameters']:,} parameters"
    )
    for text, restored in zip(PROBE_TEXTS, metadata["probe_restored"]):
        print(f"  {text}\n    -> {restored}")
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
