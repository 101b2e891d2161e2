"""Trains the `ding_de_en_bahdanau` preset: German→English, BiGRU + Bahdanau attention.

Data: the example sentences of the Ding dictionary (Debian `trans-de-en`,
GPL-2+, read from the package, never shipped), with the canonical split of
`keras_rnnattn.datasets.load_ding_de_en` (test: 1000, validation: 500, train:
15,070). Each epoch also draws `--lexicon` pairs (default 15,000) afresh from
the dictionary's other words and phrases (`load_ding_de_en_lexicon`; none
shares a side with a canonical sentence pair). Subwords: one BPE tokenizer per
side, learned on the training sentences, so every word can be spelled and no
output holds an unknown-token mark.
Model: BiGRU encoder (192 per direction), GRU decoder (192) with Bahdanau
attention and input feeding, and in the softmax layer the lexical model and
the fixnorm output layer (r = 3.5) of Nguyen & Chiang (2018).
Training: cross-entropy with label smoothing 0.1, Adam with an exponential
moving average of the weights (momentum 0.999): the average is what is
validated, early-stopped and shipped. `--members 2` (the default)
trains two such translators at once from seeds `--seed` and `--seed + 1`, each
in its own process pinned to one CPU core (this same script with `--members
1`), and ships them as one `TranslatorEnsemble` (the mean of their next-token
probabilities) with float16 weights. Evaluation: sacrebleu BLEU and chrF on the
test split, cased and detokenized, greedy and beam 4 with the GNMT length
penalty that scores best on the validation split.

    python applications/ding_de_en_bahdanau/train.py                    # the preset
    python applications/ding_de_en_bahdanau/train.py --attention none   # baseline
    python applications/ding_de_en_bahdanau/train.py --members 1        # one translator
    python applications/ding_de_en_bahdanau/train.py --lexicon 0        # sentences only
    python applications/ding_de_en_bahdanau/train.py --no-lexical-model
    python applications/ding_de_en_bahdanau/train.py --extra-data alternatives
    python applications/ding_de_en_bahdanau/train.py --extra-data libreoffice
    python applications/ding_de_en_bahdanau/train.py --tag      # tagged lexicon
    python applications/ding_de_en_bahdanau/train.py --schedule linear --epochs 14
    python applications/ding_de_en_bahdanau/train.py --ema 0   # no weight averaging
    python applications/ding_de_en_bahdanau/train.py --units 256 --embedding-dim 256 --fixnorm 0 --ema 0  # the previous recipe
    python applications/ding_de_en_bahdanau/train.py --quick            # smoke run

Beside this file, in the package `applications.ding_de_en_bahdanau`:
`options.py` (the command-line options, the model's description), `data.py`
(the extra corpora, the tagged length-bucketed batches), `evaluation.py` (the
test scores, the length penalty chosen on validation) and `members.py` (the
ensemble's member processes).
"""

import json
import os
import sys
import time
from pathlib import Path

import keras

from keras_rnnattn.datasets import load_ding_de_en
from keras_rnnattn.metrics import bleu, bleu_signature, chrf, chrf_signature
from keras_rnnattn.models import Translator
from keras_rnnattn.text import BpeTokenizer
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, runs  # noqa: E402
from applications.ding_de_en_bahdanau.data import (  # noqa: E402
    TaggedBatches,
    describe_data,
    load_auxiliary_data,
)
from applications.ding_de_en_bahdanau.evaluation import (  # noqa: E402
    evaluate,
    loss_and_size,
    pick_length_penalty,
)
from applications.ding_de_en_bahdanau.members import train_members  # noqa: E402
from applications.ding_de_en_bahdanau.options import (  # noqa: E402
    NAME,
    describe_model,
    parse_args,
)

SLICE = 20  # the test slice whose greedy chrF and BLEU are stored for the tests
PROBE_TEXTS = [
    "Das Kind entwickelt sich normal.",
    "Ich habe keine Zeit.",
    "Wo ist der Bahnhof?",
]


def training_callbacks(args):
    """The run's `BudgetCallbacks`: the --time-budget clock, the learning-rate
    schedule that `--schedule` names, with --ema the averaged weights from each
    epoch's end on (validated, kept by early stopping and shipped), and early
    stopping on the validation loss."""
    schedule = []
    if args.schedule == "linear":
        # Epoch k of --epochs trains at learning_rate * (epochs - k) / epochs.
        schedule.append(
            keras.callbacks.LearningRateScheduler(
                lambda epoch, rate: (
                    args.learning_rate * (args.epochs - epoch) / args.epochs
                )
            )
        )
    if args.schedule == "plateau":
        # Halve the learning rate whenever the validation loss stops improving.
        schedule.append(
            keras.callbacks.ReduceLROnPlateau(
                monitor="val_loss", factor=0.5, patience=1, min_lr=1e-5
            )
        )
    return BudgetCallbacks(
        args.time_budget,
        call_minutes=args.minutes,
        patience=args.patience,
        swap_ema=bool(args.ema),
        decay_learning_rate=args.schedule == "budget",
        schedule=schedule,
    )


def train_one(args, train_pairs, val_pairs, test_pairs):
    """Trains one Translator; returns `(model, training metrics, data, license)`."""
    extra_pairs, lexicon = load_auxiliary_data(args, val_pairs, test_pairs)
    keras.utils.set_random_seed(args.seed)
    start = time.time()
    # Subwords are learned on the training sentences alone (the lexicon's
    # rare technical words would take merges the sentences need).
    if args.joint_bpe:
        source_tokenizer = target_tokenizer = BpeTokenizer(
            max_vocab=args.bpe_size, seed=args.seed
        ).fit([de for de, _ in train_pairs] + [en for _, en in train_pairs])
    else:
        source_tokenizer = BpeTokenizer(max_vocab=args.bpe_size, seed=args.seed).fit(
            [de for de, _ in train_pairs]
        )
        target_tokenizer = BpeTokenizer(max_vocab=args.bpe_size, seed=args.seed).fit(
            [en for _, en in train_pairs]
        )
    print(f"BPE learned in {time.time() - start:.1f} s", flush=True)
    model = Translator(
        source_tokenizer,
        target_tokenizer,
        embedding_dim=args.embedding_dim,
        units=args.units,
        encoder_units=args.encoder_units,
        bidirectional=True,
        cell="gru",
        attention=args.attention,
        input_feeding=args.input_feeding,
        dropout=args.dropout,
        word_dropout=args.word_dropout,
        lexical_model=args.lexical_model and args.attention != "none",
        share_embeddings=args.share_embeddings,
        share_decoder_embeddings=args.share_decoder_embeddings,
        fixnorm=args.fixnorm,
        max_source_length=128,
        max_target_length=128,
    )
    model.compile(
        optimizer=adam_with_ema(args.learning_rate, ema=args.ema),
        label_smoothing=args.label_smoothing,
    )
    train_data = TaggedBatches(
        model,
        train_pairs + extra_pairs,
        args.batch_size,
        args.seed,
        extra=lexicon,
        extra_per_epoch=args.lexicon,
        # The alternatives are Ding sentences too: only out-of-domain text is tagged.
        num_tagged=len(extra_pairs) if args.extra_data == "libreoffice" else 0,
        tag_id=source_tokenizer.bos_id if args.tag else None,
        bpe_dropout=args.bpe_dropout,
        target_multiple=args.target_multiple,
    )
    val_data = TaggedBatches(
        model, val_pairs, args.batch_size, args.seed, shuffle=False
    )
    metrics = runs.fit_run(
        args,
        NAME,
        model,
        train_data,
        validation_data=val_data,
        epochs=args.epochs,
        # Stopped by the clock: the epoch with the best validation loss is kept
        # (with label smoothing, of the smoothed loss).
        callbacks=training_callbacks(args),
        verbose=2,
    )
    metrics["learning_rate_schedule"] = args.schedule
    return (model, metrics) + describe_data(args, extra_pairs, lexicon)


def print_summary(args, folder, metrics, test_pairs, beam_outputs):
    """The results table (greedy and beam), the training facts and five examples."""
    beam = f"beam{args.beam_size}"
    print("\n| preset | attention | decoding | BLEU | chrF | unk outputs | sent/s |")
    print("|---|---|---|---|---|---|---|")
    for label in ("greedy", beam):
        print(
            f"| {os.path.basename(folder)} | {args.attention} | {label} | "
            f"{metrics[f'test_{label}_bleu']:.1f} | {metrics[f'test_{label}_chrf']:.1f} | "
            f"{metrics[f'test_{label}_unk_outputs']} | "
            f"{metrics[f'test_{label}_sentences_per_second']:.0f} |"
        )
    epochs = metrics["epochs_run"]
    print(
        f"training: {epochs} epochs, {metrics['train_seconds'] / 60:.1f} min, "
        f"{metrics['parameters']:,} parameters"
    )
    for (de, en), hyp in list(zip(test_pairs, beam_outputs))[:5]:
        print(f"  DE  {de}\n  REF {en}\n  OUT {hyp}")


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    train_pairs, val_pairs, test_pairs = common.load_splits(load_ding_de_en)
    if args.quick:
        train_pairs, val_pairs, test_pairs = (
            train_pairs[:200],
            val_pairs[:20],
            test_pairs[:SLICE],
        )
    if args.members > 1:
        model, metrics, data, data_license = train_members(args, argv)
        description = (
            f"An ensemble of {args.members} translators of one recipe, trained "
            f"side by side from seeds {args.seed} to {args.seed + args.members - 1} "
            "(TranslatorEnsemble: the mean of their next-token probabilities), "
            "weights stored as float16. Each: " + describe_model(args)
        )
    else:
        model, metrics, data, data_license = train_one(
            args, train_pairs, val_pairs, test_pairs
        )
        description = describe_model(args)

    metrics.update(loss_and_size(model, args, test_pairs))
    alpha = args.length_penalty
    if alpha is None:
        alpha, tried = pick_length_penalty(model, val_pairs, args.beam_size)
        metrics["validation_length_penalty_bleu_plus_chrf"] = {
            str(a): v for a, v in tried.items()
        }
    # The beam's α chosen on validation: the preset's search settings, which
    # `translate`, the CLI and export read (`SearchSettings.from_metadata`).
    search = {"length_penalty": alpha}
    results = {}
    for label, beam, penalty in (
        ("greedy", 1, 0.0),
        (f"beam{args.beam_size}", args.beam_size, alpha),
    ):
        scores, hypotheses = evaluate(model, test_pairs, beam, penalty)
        results[label] = hypotheses
        for key, value in scores.items():
            metrics[f"test_{label}_{key}"] = value
        print(f"{label}: {json.dumps(scores)}", flush=True)

    slice_pairs = test_pairs[:SLICE]
    # One batch, as the preset tests translate it (each row's length limit is
    # its own, so this also equals translating each text alone).
    slice_greedy = model.translate([de for de, _ in slice_pairs])
    command = common.command_line(NAME, argv)
    metadata = {
        "description": description,
        "data": data,
        "data_license": data_license,
        "command": command,
        "search": search,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "metric_notes": "sacrebleu corpus BLEU and chrF, cased, detokenized output "
        "against the raw English references",
        # What `bleu` and `chrf` computed, as sacrebleu writes it beside a score.
        "sacrebleu_signatures": {"bleu": bleu_signature(), "chrf": chrf_signature()},
        "probe_texts": PROBE_TEXTS,
        "probe_greedy": model.translate(PROBE_TEXTS),
        # Scores only: the corpus is GPL-2+, so no sentence of it is stored.
        "test_slice_greedy_chrf": chrf(slice_greedy, [en for _, en in slice_pairs]),
        "test_slice_greedy_bleu": bleu(slice_greedy, [en for _, en in slice_pairs]),
    }
    folder = model.save_to_preset(
        args.out,
        metadata=metadata,
        weights_dtype="float16" if args.members > 1 else None,
    )

    print_summary(args, folder, metrics, test_pairs, results[f"beam{args.beam_size}"])
    print(f"preset: {folder}")
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
