"""What the grapheme-to-phoneme recipes share: their options, batches and the
character-level Translator they train (`cmudict_g2p`, `misaki_us_g2p`)."""

import os
import tempfile

import keras

from applications import common, runs
from keras_rnnattn.datasets import LengthBucketedBatches
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS
from keras_rnnattn.models import Translator
from keras_rnnattn.text import Vocabulary
from keras_rnnattn.training import BudgetCallbacks, adam_with_ema, linear_decay


def argument_parser(doc, time_budget):
    """The G2P recipes' options: the network, the training and the search."""
    parser = common.argument_parser(doc)
    parser.add_argument(
        "--attention", default="bahdanau", choices=TRANSLATOR_ATTENTIONS
    )
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--encoder-layers", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--ema", type=float, default=0.999, help="0: off")
    parser.add_argument(
        "--epochs", type=int, default=None, help="default 100 (1 with --quick)"
    )
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget",
        type=float,
        default=time_budget,
        help="training minutes at most",
    )
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument(
        "--schedule",
        choices=("budget", "linear"),
        default="budget",
        help="the learning rate's linear decay: over the epochs that fit in "
        "--time-budget, or over --epochs (the same however the run is split)",
    )
    return parser


def finish_args(args, name):
    """EMA 0 as None, the default `--out` (saved_models/<name>, or
    <name>_<attention> for another attention; a temp folder with `--quick`),
    the default `--epochs` and the tiny network of `--quick`."""
    args.ema = args.ema or None
    if args.out is None:
        folder = name if args.attention == "bahdanau" else f"{name}_{args.attention}"
        args.out = os.path.join("saved_models", folder)
        if args.quick:
            args.out = os.path.join(tempfile.mkdtemp(), folder)
    if args.epochs is None:
        args.epochs = 1 if args.quick else 100
    if args.quick:
        args.embedding_dim = 16
        args.units = 16
    return args


def pair_batches(model, words, phonemes, args, shuffle):
    """Length-bucketed training batches of `(word, phonemes)` pairs."""
    (source, target_in), target_out = model.encode_pairs(words, phonemes)
    return LengthBucketedBatches(
        (source, target_in),
        target_out,
        batch_size=args.batch_size,
        shuffle=shuffle,
        seed=args.seed,
    )


def extend_tokenizer(preset_tokenizer, fitted):
    """`preset_tokenizer` with the tokens only `fitted` has appended (new ids
    after the preset's); `(tokenizer, whether it grew)`."""
    known = set(preset_tokenizer.vocabulary.tokens)
    new = [t for t in fitted.vocabulary.tokens if t not in known]
    if not new:
        return preset_tokenizer, False
    config = preset_tokenizer.get_config()
    config["vocabulary"] = Vocabulary(
        preset_tokenizer.vocabulary.tokens[4:] + new,
        special_tokens=preset_tokenizer.special_tokens,
    ).get_config()
    return type(preset_tokenizer).from_config(config), True


def train_translator(args, name, tokenizers, train_pairs, val_pairs, max_lengths):
    """Builds and trains the recipes' Translator: a BiGRU encoder, a GRU decoder
    with the attention of `args` and input feeding, in a training run
    (`runs.fit_run`: from `--init-from`'s weights and tokenizers, or
    `--resume`d); `(model, training metrics)`.

    Args:
        args: the parsed options.
        name: the recipe's name (its run folder's).
        tokenizers: `(source, target)`, fitted (`--init-from`'s replace them).
        train_pairs, val_pairs: `(words, phonemes)`, two lists of str each.
        max_lengths: `(max_source_length, max_target_length)`.
    """
    start = runs.start_tokenizers(args)
    extended = False
    if start is not None:
        # The preset's ids, then the tokens only this recipe's data has (the
        # British symbols of a G2P started from the American one).
        source, grown_source = extend_tokenizer(
            start["source_tokenizer"], tokenizers[0]
        )
        target, grown_target = extend_tokenizer(
            start["target_tokenizer"], tokenizers[1]
        )
        # How it reads letters it lacks is this recipe's (the ids are the preset's).
        source.fold_letters = getattr(tokenizers[0], "fold_letters", False)
        tokenizers, extended = (source, target), grown_source or grown_target
    keras.utils.set_random_seed(args.seed)
    model = Translator(
        *tokenizers,
        embedding_dim=args.embedding_dim,
        units=args.units,
        encoder_layers=args.encoder_layers,
        bidirectional=True,
        cell="gru",
        attention=args.attention,
        input_feeding=args.attention != "none",
        dropout=args.dropout,
        max_source_length=max_lengths[0],
        max_target_length=max_lengths[1],
    )
    model.compile(
        optimizer=adam_with_ema(args.learning_rate, ema=args.ema),
        label_smoothing=args.label_smoothing,
    )
    linear = args.schedule == "linear"
    metrics = runs.fit_run(
        args,
        name,
        model,
        pair_batches(model, *train_pairs, args, shuffle=True),
        validation_data=pair_batches(model, *val_pairs, args, shuffle=False),
        epochs=args.epochs,
        callbacks=BudgetCallbacks(
            args.time_budget,
            patience=args.patience,
            swap_ema=bool(args.ema),
            decay_learning_rate=not linear,
            schedule=[linear_decay(args.learning_rate, args.epochs)] if linear else [],
            call_minutes=args.minutes,
        ),
        verbose=2,
        extend_vocabulary=extended,
    )
    metrics["learning_rate_schedule"] = args.schedule
    metrics["label_smoothing"] = args.label_smoothing
    return model, metrics
