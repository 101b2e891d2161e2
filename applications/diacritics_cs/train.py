"""Trains the `diacritics_cs` preset: Czech typed without diacritics → with them.

Data: Czech text of two Debian packages (`keras_rnnattn.datasets.load_czech_text`):
everyday sayings, jokes and dialogue (`fortunes-cs`) and help pages
(`libreoffice-help-cs`), each split by document (5% test, 5% validation).
Each split of each source is read as one running text (its documents joined
by newlines) and cut at spaces into windows of at most `--window`
characters.
Input: the text without marks, lowercased, one token per character
(`CharTokenizer`); target: each character's marks (`diacritic_tags`:
`none`, `acute`, `caron`, `ring_above`, ...); marks rarer than
`--min-tag-count` in the training text are left out (tagged `none`).
Model: a `SequenceTagger`: character embeddings, a bidirectional LSTM,
self-attention over its states (`scaled_general`), softmax over the tags
from [h_i; c_i]; `--attention none` trains the same tagger without
attention (the baseline).
Training: cross-entropy, Adam with an exponential moving average of the
weights, the learning rate decayed linearly over `--time-budget`.
Evaluation: word accuracy on each source's held-out documents, restored line
by line with `restore_diacritics` as a user gets them, over all words and
over the words whose correct form has a mark, beside the lexicon baseline
(each word's most frequent marked form in the training text).

    python applications/diacritics_cs/train.py                   # the preset
    python applications/diacritics_cs/train.py --attention none  # baseline
    python applications/diacritics_cs/train.py --quick           # smoke run
"""

import collections
import os
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_rnnattn.datasets import load_czech_text
from keras_rnnattn.layers.score_layers import NO_ATTENTION, SELF_ATTENTION_SCORES
from keras_rnnattn.models import SequenceTagger
from keras_rnnattn.text import NO_MARK, CharTokenizer, diacritic_tags
from keras_rnnattn.text.diacritics import char_ids, model_text, text_windows
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402

NAME = "diacritics_cs"
SPLITS = ("train", "validation", "test")


def parse_args(argv=None):
    parser = common.argument_parser(__doc__)
    parser.add_argument(
        "--attention",
        default="scaled_general",
        choices=(*SELF_ATTENTION_SCORES, NO_ATTENTION),
    )
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--units", type=int, default=192)
    parser.add_argument("--window", type=int, default=192, help="characters")
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--min-tag-count", type=int, default=50)
    parser.add_argument(
        "--oversample",
        default="",
        metavar="SOURCE=K,...",
        help="read these sources' training text K times an epoch (e.g. "
        "fortunes_cs=3: more everyday text beside the help pages)",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--ema", type=float, default=0.999, help="0: off")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=60.0, help="training minutes at most"
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
        args.embedding_dim, args.units, args.window, args.epochs = 8, 8, 64, 1
        args.min_tag_count = 1
    return args


def load_data(quick=False):
    """`{split: {source: [documents]}}`; a few documents each with `quick`."""
    data = {split: load_czech_text(split) for split in SPLITS}
    if quick:
        data = {s: {k: v[:20] for k, v in d.items()} for s, d in data.items()}
    return data


def running_texts(split_data, oversample=None):
    """Each source's documents joined by newlines: `{source: text}`; a source
    named in `oversample` (`{source: K}`) is read K times."""
    oversample = oversample or {}
    return {
        name: "\n".join(docs * oversample.get(name, 1))
        for name, docs in split_data.items()
    }


def oversampling(spec):
    """`{source: K}` of `--oversample`'s `SOURCE=K,...` (empty: none)."""
    out = {}
    for item in filter(None, spec.split(",")):
        name, _, count = item.partition("=")
        if not count.isdigit() or int(count) < 1:
            raise ValueError(
                f"--oversample takes SOURCE=K with K >= 1, e.g. fortunes_cs=3. "
                f"Received: {item!r}"
            )
        out[name] = int(count)
    return out


def tag_set(texts, min_count):
    """`NO_MARK` and the marks seen at least `min_count` times, most frequent
    first."""
    counts = collections.Counter(
        tag for text in texts for tag in diacritic_tags(text)[1] if tag != NO_MARK
    )
    return [NO_MARK] + [t for t, n in counts.most_common() if n >= min_count]


def window_arrays(tokenizer, texts, tags, width):
    """Character ids and tag ids `(N, width)` of the windows of each text."""
    index = {tag: i for i, tag in enumerate(tags)}
    rows = []
    for text in texts:
        stripped, text_tags = diacritic_tags(text)
        read = model_text(stripped)
        for start, end in text_windows(read, width):
            ids = char_ids(tokenizer, read[start:end])
            labels = [index.get(t, 0) for t in text_tags[start:end]]
            rows.append((ids, labels))
    x = np.zeros((len(rows), width), "int32")
    y = np.zeros((len(rows), width), "int32")
    for i, (ids, labels) in enumerate(rows):
        x[i, : len(ids)], y[i, : len(labels)] = ids, labels
    return x, y


def build(args, train_texts):
    tokenizer = CharTokenizer(min_count=5).fit(
        [model_text(diacritic_tags(t)[0]) for t in train_texts]
    )
    return SequenceTagger(
        tokenizer=tokenizer,
        tags=tag_set(train_texts, args.min_tag_count),
        embedding_dim=args.embedding_dim,
        units=args.units,
        cell="lstm",
        score=None if args.attention == "none" else args.attention,
        dropout=args.dropout,
        max_length=args.window,
    )


def train(args, data):
    """Builds and trains the tagger; returns `(model, training metrics)`."""
    keras.utils.set_random_seed(args.seed)
    # The vocabulary and tags from the text as it is (the same with or without
    # --oversample, so that --init-from finds its ids); the windows from the
    # oversampled text.
    model = build(args, list(running_texts(data["train"]).values()))
    train_texts = list(
        running_texts(data["train"], oversampling(args.oversample)).values()
    )
    model.compile(optimizer=adam_with_ema(args.learning_rate, ema=args.ema))
    x, y = window_arrays(model.tokenizer, train_texts, model.tags, args.window)
    val = window_arrays(
        model.tokenizer,
        list(running_texts(data["validation"]).values()),
        model.tags,
        args.window,
    )
    print(f"{len(x):,} training windows, {int((x > 0).sum()):,} characters")
    print(f"tags: {model.tags}", flush=True)
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
    model.save_to_preset(args.out, metadata={"metrics": metrics, "command": ""})
    return model, metrics


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    data = load_data(quick=args.quick)
    model, metrics, command = common.trained_or_reloaded(
        args, NAME, argv, SequenceTagger, lambda: train(args, data)
    )
    from applications.diacritics_cs import evaluation

    metadata = evaluation.metadata(model, args, data, metrics, command)
    folder = model.save_to_preset(
        args.out, metadata=metadata, weights_dtype="float16" if args.float16 else None
    )
    evaluation.report(metadata)
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
