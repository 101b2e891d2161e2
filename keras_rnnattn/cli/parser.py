"""The argument parser of the `keras-rnnattn` command: one subparser per
command, each with its handler (`_cli_commands`)."""

import argparse

from keras_rnnattn._checks import argparse_type, non_negative_float, positive_int
from keras_rnnattn.cli.backend import PROG
from keras_rnnattn.cli.commands import (
    cmd_classify,
    cmd_diacritics,
    cmd_export,
    cmd_generate,
    cmd_presets,
    cmd_punctuate,
    cmd_tag,
    cmd_train,
    cmd_translate,
)
from keras_rnnattn.cli.pronounce import cmd_pronounce
from keras_rnnattn.export.checks import FORMATS


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, exit status 2."""

    def error(self, message):
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# --- Argument types ------------------------------------------------------------------
_positive_int = argparse_type(positive_int, int)
_non_negative_float = argparse_type(non_negative_float, float)


def _probability(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a float in (0, 1], got {text!r}")
    return value


# --- Parser ----------------------------------------------------------------------------
def _add_preset(parser, default=None):
    parser.add_argument(
        "--preset",
        required=default is None,
        default=default,
        metavar="NAME",
        help=f"a preset name (see `{PROG} presets`) or the path of a preset folder"
        + (f" (default {default})" if default else ""),
    )


def _add_batch_size(parser):
    parser.add_argument(
        "--batch-size",
        type=_positive_int,
        default=32,
        metavar="N",
        help="texts per model call (default 32)",
    )


def build_parser():
    """The argument parser of `keras-rnnattn` (for documentation and tests).

    Returns:
        An `argparse.ArgumentParser` with one subparser per command.

    Example:

    >>> args = build_parser().parse_args(["classify", "--preset", "p", "good"])
    >>> args.command, args.texts
    ('classify', ['good'])
    """
    parser = _Parser(
        prog=PROG,
        description="Use and train the pretrained keras-rnnattn models.",
        epilog="Texts are read from stdin, one per line, when none are given. "
        "Set KERAS_BACKEND to tensorflow, jax or torch to choose the backend, "
        "and KERAS_RNNATTN_PRESETS to add preset folders.",
    )
    parser.add_argument("--version", action="store_true", help="print the version")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an error, show the Python traceback instead of one line",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = commands.add_parser("presets", help="list the available presets")
    p.add_argument("--json", action="store_true", help="print JSON, not a table")
    p.set_defaults(handler=cmd_presets)

    p = commands.add_parser("translate", help="translate texts with a preset")
    _add_preset(p)
    p.add_argument(
        "--beam", type=_positive_int, default=1, metavar="N", help="beam size"
    )
    p.add_argument(
        "--length-penalty",
        type=_non_negative_float,
        default=None,
        metavar="A",
        help="GNMT length penalty alpha of the beam (larger: longer outputs; "
        "default: the alpha the preset's recipe validated, else 0)",
    )
    p.add_argument(
        "--coverage-penalty",
        type=_non_negative_float,
        default=None,
        metavar="B",
        help="coverage penalty beta of the beam (default: the beta the preset's "
        "recipe validated, else 0)",
    )
    p.add_argument(
        "--max-length",
        type=_positive_int,
        metavar="N",
        help="the most output tokens (default: the model's)",
    )
    p.add_argument(
        "--keep-unknown",
        action="store_true",
        help="print <unk> where the model does not know a target word (default: "
        "the source word its attention points at)",
    )
    p.add_argument(
        "--attention",
        metavar="FILE.png",
        help="save the attention heat map (one file per text: FILE-1.png, ...)",
    )
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_translate)

    p = commands.add_parser(
        "pronounce",
        help="spell out the pronunciation of words: `word PH ON EH M Z`, one line "
        "per word in the order given (CMUdict's format), printed line by line",
    )
    _add_preset(p, default="cmudict_g2p")
    p.add_argument(
        "--beam", type=_positive_int, default=1, metavar="N", help="beam size"
    )
    _add_batch_size(p)
    p.add_argument(
        "--misaki-version",
        choices=("1.0", "2.0"),
        default="2.0",
        help="misaki's symbols: 2.0 (the lexicon's, default) or 1.0 (Kokoro-82M "
        "v1.0's T and t for the flap and glottal stop)",
    )
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_pronounce)

    p = commands.add_parser(
        "punctuate",
        help="restore punctuation and capitals of lowercase, unpunctuated text "
        "with a punctuation tagger",
    )
    _add_preset(p, default="punctuation_en")
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_punctuate)

    p = commands.add_parser(
        "diacritics",
        help="put back the diacritics of text typed without them with a "
        "diacritics tagger (only marks on letters change)",
    )
    _add_preset(p, default="diacritics_cs")
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_diacritics)

    p = commands.add_parser("classify", help="classify texts: label and probability")
    _add_preset(p)
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_classify)

    p = commands.add_parser("tag", help="tag every token: token/TAG")
    _add_preset(p)
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=cmd_tag)

    p = commands.add_parser("generate", help="continue prompts with a language model")
    _add_preset(p)
    p.add_argument(
        "--max-length",
        type=_positive_int,
        metavar="N",
        help="the most tokens of each whole sequence, prompt included (keras-hub)",
    )
    p.add_argument(
        "--max-new-tokens", type=_positive_int, metavar="N", help="the most new tokens"
    )
    p.add_argument(
        "--temperature",
        type=_non_negative_float,
        metavar="T",
        help="sampling temperature; 0 is greedy (default: the model's, 1.0)",
    )
    p.add_argument("--top-k", type=_positive_int, metavar="K", help="top-k sampling")
    p.add_argument(
        "--top-p", type=_probability, metavar="P", help="nucleus (top-p) sampling"
    )
    p.add_argument("--seed", type=int, metavar="S", help="seed: same seed, same text")
    p.add_argument("prompts", nargs="*", metavar="PROMPT")
    p.set_defaults(handler=cmd_generate)

    p = commands.add_parser(
        "train",
        help="run an application's recipe, applications/APPLICATION/train.py",
    )
    p.add_argument("application", metavar="APPLICATION")
    p.add_argument(
        "args", nargs=argparse.REMAINDER, help="passed on to the recipe's train.py"
    )
    p.set_defaults(handler=cmd_train)

    p = commands.add_parser(
        "export", help="export a preset as SavedModel, TFLite or ONNX"
    )
    _add_preset(p)
    p.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="Keras's names tf_saved_model, litert and onnx (they need "
        'pip install ".[tensorflow]", ".[export]" and '
        '".[onnx]"); saved_model and tflite are the same as the '
        "first two",
    )
    p.add_argument(
        "--quantize", action="store_true", help="int8 weights (litert and onnx)"
    )
    p.add_argument(
        "--batch-size",
        type=_positive_int,
        metavar="N",
        help="fixed batch size (litert default 1; tf_saved_model and onnx "
        "default: variable)",
    )
    p.add_argument(
        "--sequence-length",
        type=_positive_int,
        metavar="N",
        help="fixed input length in tokens (litert default: the model's limit; "
        "tf_saved_model and onnx default: variable)",
    )
    p.add_argument(
        "--max-length",
        type=_positive_int,
        metavar="N",
        help="most tokens the exported decode loops produce",
    )
    p.add_argument(
        "--beam-size",
        type=_positive_int,
        metavar="N",
        help="beam of the translator's beam_search signature (default 4)",
    )
    p.add_argument(
        "--length-penalty",
        type=_non_negative_float,
        metavar="A",
        help="length penalty alpha of the beam_search signature (default: the "
        "alpha the preset's recipe validated, as `translate --beam` uses; "
        "recorded in export.json)",
    )
    p.add_argument(
        "--coverage-penalty",
        type=_non_negative_float,
        metavar="B",
        help="coverage penalty beta of the beam_search signature (default: the "
        "preset's, else 0)",
    )
    p.add_argument("out", metavar="OUT", help="the output folder")
    p.set_defaults(handler=cmd_export)
    return parser
