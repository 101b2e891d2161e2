"""The recipe's command-line options and the description of the model they make."""

import argparse
import os
import tempfile

from applications import common
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS

NAME = "ding_de_en_bahdanau"
# The first line of train.py's docstring: what `--help` says the script does.
DESCRIPTION = (
    "Trains the `ding_de_en_bahdanau` preset: German→English, BiGRU + Bahdanau "
    "attention."
)


def parse_args(argv=None):
    parser = common.argument_parser(DESCRIPTION)
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
