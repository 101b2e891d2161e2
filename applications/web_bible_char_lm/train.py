"""Trains the `web_bible_char_lm` preset: a character-level AttentiveLanguageModel.

Data: the World English Bible (public domain; Debian `sword-text-web`), with
the canonical split of `keras_rnnattn.datasets.load_world_english_bible`
(blocks of 100 verses: test 5%, validation 5%, train 90%). Each verse is a
text; verses longer than the model's window are cut at spaces into pieces.
The recipe trains the same GRU twice, with causal attention over its previous
states and without (`attention=False`), for the same number of epochs (the best
epoch on validation kept), and reports the
test perplexity per character (end tokens included) and bits per character
of both; the attention model is the preset. Sample generations go to its
metadata and the model card.

    python applications/web_bible_char_lm/train.py
    python applications/web_bible_char_lm/train.py --quick   # smoke run
"""

import json
import math
import os
import sys
import tempfile
from pathlib import Path

import keras

from keras_rnnattn.datasets import load_world_english_bible
from keras_rnnattn.models import AttentiveLanguageModel
from keras_rnnattn.text import CharTokenizer
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402

NAME = "web_bible_char_lm"
PROMPTS = ["In the beginning", "And Jesus said to them,", "The LORD is my shepherd"]
SLICE = 100  # the test slice whose perplexity is stored for the preset tests


def parse_args(argv=None):
    parser = common.argument_parser(__doc__, out=os.path.join("saved_models", NAME))
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument(
        "--epochs", type=int, default=3, help="epochs per model (the same for both)"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=20.0,
        help="training minutes per model at most (a safety stop)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.out = os.path.join(tempfile.mkdtemp(), NAME)
        args.units, args.embedding_dim, args.epochs = 16, 8, 1
    return args


def pieces(text, width):
    """The verses of `text`, each cut at spaces into pieces of at most `width`."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        while len(line) > width:
            cut = line.rfind(" ", 0, width + 1)
            cut = width if cut <= 0 else cut
            out.append(line[:cut].strip())
            line = line[cut:].strip()
        if line:
            out.append(line)
    return out


def train(args, tokenizer, train_texts, val_texts, attention):
    keras.utils.set_random_seed(args.seed)
    model = AttentiveLanguageModel(
        tokenizer=tokenizer,
        embedding_dim=args.embedding_dim,
        units=args.units,
        attention=attention,
        max_length=args.max_length,
        dropout=args.dropout,
    )
    model.compile(
        optimizer=adam_with_ema(args.learning_rate, clipnorm=None, global_clipnorm=5.0)
    )
    plateau = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=1
    )
    metrics = runs.fit_run(
        args,
        NAME,
        model,
        train_texts,
        validation_data=val_texts,
        epochs=args.epochs,
        batch_size=args.batch_size,
        # The clock is a safety stop here: no learning-rate decay over it.
        callbacks=BudgetCallbacks(
            args.time_budget,
            call_minutes=args.minutes,
            patience=2,
            decay_learning_rate=False,
            schedule=[plateau],
        ),
        verbose=2,
    )
    return model, {
        "epochs_run": metrics["epochs_run"],
        "train_seconds": metrics["train_seconds"],
        "parameters": int(model.count_params()),
    }


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    splits = common.load_splits(load_world_english_bible)
    width = args.max_length - 1  # one position is the begin token
    train_texts, val_texts, test_texts = (pieces(text, width) for text in splits)
    if args.quick:
        train_texts, val_texts, test_texts = (
            train_texts[:300],
            val_texts[:50],
            test_texts,
        )
    tokenizer = CharTokenizer(lowercase=False).fit(train_texts)
    print(
        f"{len(train_texts)} train / {len(val_texts)} validation / {len(test_texts)} "
        f"test texts; {tokenizer.vocabulary_size} characters",
        flush=True,
    )

    metrics, models = {}, {}
    for label, attention in (("attention", True), ("no_attention", False)):
        model, facts = train(args, tokenizer, train_texts, val_texts, attention)
        models[label] = model
        ppl = model.perplexity(test_texts, batch_size=256)
        metrics[f"{label}_test_perplexity"] = ppl
        metrics[f"{label}_test_bits_per_char"] = math.log2(ppl)
        for key, value in facts.items():
            metrics[f"{label}_{key}"] = value
        print(f"{label}: test perplexity {ppl:.3f} ({math.log2(ppl):.3f} bits/char)")
    model = models["attention"]
    metrics[f"test_slice_perplexity_first_{SLICE}"] = model.perplexity(
        test_texts[:SLICE], batch_size=SLICE
    )
    samples = {
        p: model.generate(p, max_new_tokens=100, temperature=0.7, seed=1)
        for p in PROMPTS
    }
    greedy = model.generate(PROMPTS, max_new_tokens=40, temperature=0)
    command = common.command_line(NAME, argv)
    metadata = {
        "description": (
            f"Character-level GRU ({args.units} units) language model with causal "
            "scaled-general attention over its previous states (Luong attentional "
            "state), trained on the World English Bible."
        ),
        "data": (
            "World English Bible (engWEB2015eb, Debian sword-text-web); canonical "
            "split of blocks of 100 verses, default_rng(1234): test 5%, validation "
            "5%, train 90%; verses cut at spaces to at most "
            f"{width} characters."
        ),
        "data_license": "public domain",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "samples_temperature_0.7_seed_1": samples,
        "probe_prompts": PROMPTS,
        "probe_greedy": greedy,
    }
    folder = model.save_to_preset(args.out, metadata=metadata)

    print("\n| model | test perplexity | bits/char | epochs | train s |")
    print("|---|---|---|---|---|")
    for label in ("attention", "no_attention"):
        print(
            f"| GRU {args.units}, {label.replace('_', ' ')} | "
            f"{metrics[f'{label}_test_perplexity']:.3f} | "
            f"{metrics[f'{label}_test_bits_per_char']:.3f} | "
            f"{metrics[f'{label}_epochs_run']} | {metrics[f'{label}_train_seconds']} |"
        )
    for text in samples.values():
        print(f"  {text!r}")
    print(f"preset: {folder}")
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
