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

Beside this file, imported by their file names: `data.py` (the extra corpora,
the tagged length-bucketed batches), `evaluation.py` (the test scores, the
length penalty chosen on validation) and `members.py` (the ensemble's member
processes).
"""

import argparse
import json
import os
import sys
import tempfile
import time

import keras
from data import TaggedBatches, describe_data, load_auxiliary_data
from evaluation import evaluate, loss_and_size, pick_length_penalty
from members import train_members

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.datasets import DatasetNotFoundError, load_ding_de_en
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS
from keras_rnnattn.metrics import bleu, bleu_signature, chrf, chrf_signature
from keras_rnnattn.models import Translator
from keras_rnnattn.text import BpeTokenizer

NAME = "ding_de_en_bahdanau"
SLICE = 20  # the test slice whose greedy chrF and BLEU are stored for the tests
PROBE_TEXTS = [
    "Das Kind entwickelt sich normal.",
    "Ich habe keine Zeit.",
    "Wo ist der Bahnhof?",
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="default saved_models/<name>")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument(
        "--attention",
        default="bahdanau",
        choices=TRANSLATOR_ATTENTIONS,
    )
    parser.add_argument(
        "--bpe-size", type=int, default=2000, help="per side (with --joint-bpe: in all)"
    )
    parser.add_argument(
        "--joint-bpe",
        action="store_true",
        help="one BPE vocabulary learned on both languages' training sentences "
        "(Sennrich et al. 2016), the same tokenizer for source and target",
    )
    parser.add_argument(
        "--share-embeddings",
        action="store_true",
        help="one embedding for source and target tokens (needs --joint-bpe; "
        "Translator(share_embeddings=True))",
    )
    parser.add_argument(
        "--share-decoder-embeddings",
        action="store_true",
        help="the target embedding is the output layer's weights (Press & Wolf "
        "2017; Translator(share_decoder_embeddings=True))",
    )
    parser.add_argument(
        "--fixnorm",
        type=float,
        default=3.5,
        help="the output layer's readout parts and weight vectors at this norm "
        "(Nguyen & Chiang 2018's fixnorm, who use 3.5; Translator(fixnorm=...)); "
        "0: a plain output layer",
    )
    parser.add_argument(
        "--ema",
        type=float,
        default=0.999,
        help="keep an exponential moving average of the weights with this "
        "momentum (Polyak averaging; Adam(use_ema=True)), validate it and ship "
        "it; 0: off",
    )
    parser.add_argument("--embedding-dim", type=int, default=192)
    parser.add_argument("--units", type=int, default=192)
    parser.add_argument(
        "--encoder-units",
        type=int,
        default=None,
        help="per direction (default: --units); --units / 2 gives memory of the "
        "decoder's size, as Luong's dot score needs",
    )
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument(
        "--word-dropout",
        type=float,
        default=0.0,
        help="share of whole input tokens dropped, source and target (0.2 "
        "lowered the validation loss but also BLEU and chrF: see the card)",
    )
    parser.add_argument(
        "--input-feeding",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the attentional output of step t-1 joins the decoder's input at "
        "step t (Luong et al. 2015); --no-input-feeding runs the attention once "
        "over all decoder states, outside the recurrent loop (faster steps)",
    )
    parser.add_argument(
        "--lexical-model",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the lexical model of Nguyen & Chiang (2018): attention-weighted "
        "source embeddings join the softmax layer (Translator(lexical_model=True)); "
        "off with --attention none",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--target-multiple",
        type=int,
        default=None,
        help="pad each batch's targets to their own multiple of this (and "
        "sources to theirs, of 8) instead of both to the longer side's "
        "multiple of 8: 26%% fewer padded decoder steps with 4, 39 batch "
        "shapes instead of 8",
    )
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument(
        "--label-smoothing",
        type=float,
        default=0.1,
        help="of the training loss (validation loss too; test perplexity without)",
    )
    parser.add_argument(
        "--schedule",
        choices=("budget", "plateau", "linear"),
        default="budget",
        help="learning rate: `budget`, linear decay to almost zero over the "
        "epochs that fit in --time-budget (TimeBudget(decay_learning_rate=True), "
        "Li et al. 2020); `plateau`, halved whenever the validation loss does "
        "not improve (the recipe before 25 November); `linear`, the same decay "
        "over a fixed --epochs (for a host whose speed is known)",
    )
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=40.0, help="training minutes at most"
    )
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=None,
        help="GNMT α of the beam; default: the best of 0, 0.6, 1, 1.2, 1.4 on validation",
    )
    parser.add_argument(
        "--extra-data",
        choices=("none", "alternatives", "libreoffice"),
        default="none",
        help="more German-English sentences in every epoch: `alternatives`, "
        "the dictionary's 1,390 example sentences written with '/' alternatives "
        "(load_ding_de_en_alternatives, in domain); `libreoffice`, the train "
        "split of load_libreoffice_help_de_en (13,614 pairs of the LibreOffice "
        "help, out of domain)",
    )
    parser.add_argument(
        "--lexicon",
        type=int,
        default=15000,
        help="dictionary words and phrases added to each epoch (a fresh random "
        "sample of `load_ding_de_en_lexicon()`; 0: sentences only)",
    )
    parser.add_argument(
        "--tag",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="start the source of every lexicon and LibreOffice pair with a tag "
        "(the source tokenizer's bos id, unused otherwise), so the model tells "
        "them from the Ding sentences it is evaluated on",
    )
    parser.add_argument(
        "--bpe-dropout",
        type=float,
        default=0.0,
        help="BPE-dropout of the training pairs, both sides, fresh every epoch "
        "(Provilkov et al. 2020); validation and test are encoded without it",
    )
    parser.add_argument(
        "--members",
        type=int,
        default=2,
        help="translators trained side by side (one process and one CPU each, "
        "seeds --seed, --seed + 1, ...) and shipped as one TranslatorEnsemble; "
        "1 trains a single Translator",
    )
    parser.add_argument(
        "--members-dir",
        default=None,
        help="where the members' presets, logs and shared JAX compilation cache "
        "go (default: a new temporary folder); a member whose preset is already "
        "there is reused",
    )
    args = parser.parse_args(argv)
    if args.members < 1:
        parser.error(f"--members must be at least 1, not {args.members}")
    if args.target_multiple is not None and args.target_multiple < 1:
        parser.error(
            f"--target-multiple must be at least 1, not {args.target_multiple}"
        )
    if args.fixnorm is not None and args.fixnorm < 0:
        parser.error(f"--fixnorm must be positive (or 0: off), not {args.fixnorm}")
    args.fixnorm = args.fixnorm or None  # 0: a plain output layer
    if args.ema is not None and not 0 <= args.ema < 1:
        parser.error(f"--ema must be in [0, 1) (0: off), not {args.ema}")
    args.ema = args.ema or None
    if args.share_embeddings and not args.joint_bpe:
        parser.error("--share-embeddings needs one vocabulary: add --joint-bpe")
    if args.out is None:
        name = NAME if args.attention == "bahdanau" else f"ding_de_en_{args.attention}"
        args.out = os.path.join("saved_models", name)
        if args.quick:
            args.out = os.path.join(tempfile.mkdtemp(), NAME)
    if args.members > 1 and args.members_dir is None:
        args.members_dir = tempfile.mkdtemp(prefix=os.path.basename(args.out) + "_")
    if args.quick:
        args.bpe_size = 200
        args.embedding_dim = 16
        args.units = 16
        args.epochs = 1
    return args


def describe_model(args):
    """The metadata's `description` of one translator of this recipe."""
    return (
        f"German→English translator: BiGRU encoder ({args.units} per "
        f"direction), GRU decoder ({args.units}) with {args.attention} "
        f"attention"
        + (" and input feeding" if args.input_feeding else " (no input feeding)")
        + (
            " and the lexical model"
            if args.lexical_model and args.attention != "none"
            else ""
        )
        + (
            f", one BPE vocabulary of {args.bpe_size} for both languages"
            if args.joint_bpe
            else f", BPE {args.bpe_size} per side"
        )
        + (", source and target embeddings shared" if args.share_embeddings else "")
        + (
            ", the target embedding as the output layer's weights"
            if args.share_decoder_embeddings
            else ""
        )
        + (f", fixnorm {args.fixnorm} output layer" if args.fixnorm else "")
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + (f" (BPE-dropout {args.bpe_dropout} in training)" if args.bpe_dropout else "")
        + (
            f", label smoothing {args.label_smoothing}."
            if args.label_smoothing
            else "."
        )
    )


def training_callbacks(args):
    """`(budget, stop, callbacks)`: the --time-budget clock, early stopping on the
    validation loss (best weights kept) and the learning-rate schedule that
    `--schedule` names, in the order `fit` runs them."""
    budget = TimeBudget(args.time_budget, decay_learning_rate=args.schedule == "budget")
    stop = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=args.patience, restore_best_weights=True
    )
    callbacks = [budget, stop]
    if args.ema:
        # From each epoch's end on, the model holds the averaged weights: they
        # are validated, kept by early stopping and shipped.
        callbacks.insert(1, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    if args.schedule == "linear":
        # Epoch k of --epochs trains at learning_rate * (epochs - k) / epochs.
        callbacks.insert(
            1,
            keras.callbacks.LearningRateScheduler(
                lambda epoch, rate: (
                    args.learning_rate * (args.epochs - epoch) / args.epochs
                )
            ),
        )
    if args.schedule == "plateau":
        # Halve the learning rate whenever the validation loss stops improving.
        callbacks.insert(
            1,
            keras.callbacks.ReduceLROnPlateau(
                monitor="val_loss", factor=0.5, patience=1, min_lr=1e-5
            ),
        )
    return budget, stop, callbacks


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
        optimizer=keras.optimizers.Adam(
            args.learning_rate,
            clipnorm=5.0,
            use_ema=args.ema is not None,
            ema_momentum=args.ema or 0.99,
        ),
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
    budget, stop, callbacks = training_callbacks(args)
    start = time.time()
    history = model.fit(
        train_data,
        validation_data=val_data,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=2,
    )
    train_seconds = time.time() - start
    if budget.stopped and stop.best_weights is not None:
        # Stopped by the clock: keep the epoch with the best validation loss
        # (Keras validates the cut-short last epoch too).
        model.set_weights(stop.best_weights)
    metrics = {
        "epochs_run": len(history.history["loss"]),
        # With label smoothing, of the smoothed loss.
        "best_val_loss": float(min(history.history["val_loss"])),
        "train_seconds": round(train_seconds, 1),
        "stopped_by_time_budget": budget.stopped,
        "learning_rate_schedule": args.schedule,
    }
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


def main(argv=None):
    args = parse_args(argv)
    try:
        train_pairs = load_ding_de_en("train")
        val_pairs = load_ding_de_en("validation")
        test_pairs = load_ding_de_en("test")
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
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
        try:
            model, metrics, data, data_license = train_one(
                args, train_pairs, val_pairs, test_pairs
            )
        except DatasetNotFoundError as error:
            print(error, file=sys.stderr)
            return 2
        description = describe_model(args)

    metrics.update(loss_and_size(model, args, test_pairs))
    alpha = args.length_penalty
    if alpha is None:
        alpha, tried = pick_length_penalty(model, val_pairs, args.beam_size)
        metrics["validation_length_penalty_bleu_plus_chrf"] = {
            str(a): v for a, v in tried.items()
        }
    metrics["beam_length_penalty"] = alpha
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
    command = "python applications/ding_de_en_bahdanau/train.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    metadata = {
        "description": description,
        "data": data,
        "data_license": data_license,
        "command": command.strip(),
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
