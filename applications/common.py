"""What the recipes share beyond `keras_rnnattn.training`: their command-line
conventions (the recorded command, `--float16` and `--from-preset`, exit
status 2 without the corpus), loading the canonical splits, the G2P
recipes' batched transcription and scores, and the classifiers' MiniLM vectors and
accuracy."""

import argparse
import functools
import json
import sys
import time

import keras
import numpy as np

from applications import runs
from keras_rnnattn.datasets import DatasetNotFoundError, minilm_embeddings
from keras_rnnattn.presets import preset_metadata
from keras_rnnattn.training import round_to_float16

SPLITS = ("train", "validation", "test")
MINILM_DIM = 384  # the size of all-MiniLM-L6-v2's word vectors
# What `fit_best` measured, kept when `--from-preset` evaluates a model again.
TRAINING_METRICS = (
    "epochs_run",
    "best_val_loss",
    "train_seconds",
    "stopped_by_time_budget",
)
# ... and kept too where a training run recorded them.
RUN_METRICS = ("shipped_weights", "training_history")


def argument_parser(doc, out=None):
    """The parser of a recipe's options with those every recipe has: `--out`
    (default `out`, or saved_models/<name> chosen by the recipe), `--seed`,
    `--quick` and the training run's (`runs.add_run_options`); `doc` is the
    recipe's docstring (its first line describes it)."""
    parser = runs.RecipeParser(description=doc.splitlines()[0])
    help_text = "default saved_models/<name>" if out is None else None
    parser.add_argument("--out", default=out, help=help_text)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    return runs.add_run_options(parser)


def load_splits(loader):
    """`loader(split)` of the training, validation and test splits."""
    return tuple(loader(split) for split in SPLITS)


def command_line(name, argv):
    """The command that ran recipe `name`, as its preset's metadata records it."""
    arguments = sys.argv[1:] if argv is None else argv
    return f"python applications/{name}/train.py {' '.join(arguments)}".strip()


def add_preset_options(parser):
    """`--float16` (on by default) and `--from-preset FOLDER`."""
    parser.add_argument(
        "--float16",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="store the weights as float16 (half the size); the test scores are "
        "measured with the stored weights",
    )
    parser.add_argument(
        "--from-preset",
        default=None,
        metavar="FOLDER",
        help="skip training: evaluate and write the model of a preset this "
        "recipe wrote before (its training metrics and command are kept)",
    )


def trained_or_reloaded(args, name, argv, model_class, train):
    """`(model, training metrics, command)`: from `train()`, or with
    `--from-preset` the model of a preset this recipe wrote before with its
    training metrics and command; with `--float16` (the default) its weights
    rounded to float16 as the preset stores them, so every number measured
    afterwards is the shipped model's."""
    if args.from_preset:
        model = model_class.from_preset(args.from_preset)
        old = preset_metadata(args.from_preset)
        metrics = {key: old["metrics"][key] for key in TRAINING_METRICS}
        for key in RUN_METRICS:
            if key in old["metrics"]:
                metrics[key] = old["metrics"][key]
        command = old["command"]
    else:
        model, metrics = train()
        command = command_line(name, argv)
    if args.float16:
        round_to_float16(model)
    metrics["parameters"] = int(model.count_params())
    return model, metrics, command


def transcribe_all(model, words, beam_size, batch_size=500):
    """A Translator's outputs for many words, batched by length (few shapes to
    compile), in the order of `words`."""
    order = np.argsort([len(w) for w in words], kind="stable")
    out = [None] * len(words)
    for i in range(0, len(order), batch_size):
        rows = order[i : i + batch_size]
        for row, phones in zip(
            rows, model.translate([words[r] for r in rows], beam_size=beam_size)
        ):
            out[row] = phones
    return out


def score_transcriptions(model, metrics, validation, test, beam_size, error_rates):
    """The G2P recipes' evaluation: greedy on the validation words
    (`metrics["validation_greedy_wer"]`), greedy and beam search on the test
    words (`metrics["test_<decoding>_<name>"]`, with words per second), each
    test result printed. `validation` and `test` are `(words, references)`;
    `error_rates(words, outputs, references)` is a dict with `"wer"`.
    Returns the test outputs of each decoding, `{"greedy": [...], ...}`."""

    def scores(words, references, beam):
        start = time.time()
        outputs = transcribe_all(model, words, beam)
        seconds = time.time() - start
        result = error_rates(words, outputs, references)
        result["words_per_second"] = round(len(words) / seconds, 1)
        return result, outputs

    metrics["validation_greedy_wer"] = scores(*validation, 1)[0]["wer"]
    outputs = {}
    for label, beam in (("greedy", 1), (f"beam{beam_size}", beam_size)):
        result, outputs[label] = scores(*test, beam)
        for key, value in result.items():
            metrics[f"test_{label}_{key}"] = value
        print(f"test {label}: {json.dumps(result)}", flush=True)
    return outputs


def init_word_vectors(model, tokenizer):
    """Gives the words MiniLM's WordPiece vocabulary can spell its vectors."""
    table = keras.ops.convert_to_numpy(model.token_embedding.embeddings)
    table, coverage = minilm_embeddings(tokenizer, table)
    model.token_embedding.embeddings.assign(table)
    print(f"MiniLM vectors for {coverage:.1%} of the vocabulary", flush=True)


def accuracy(model, texts, labels, batch_size=256):
    """The share of `texts` a classifier labels right."""
    probs = model.predict(texts, batch_size=batch_size, verbose=0)
    return float(np.mean(np.argmax(probs, axis=-1) == labels))


def exits_on_missing_data(main):
    """`main(argv, **options)` that, when a corpus is not installed, prints the
    error (it names the install command) and returns the exit status 2."""

    @functools.wraps(main)
    def run(argv=None, **options):
        try:
            return main(argv, **options)
        except DatasetNotFoundError as error:
            print(error, file=sys.stderr)
            return 2

    return run
