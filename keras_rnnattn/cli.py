"""The `keras-rnnattn` command: presets, translate, classify, tag, generate, train, export.

Commands that need no model (`presets`, `--help`, argument errors, unknown
presets) import neither Keras nor a backend. Every failure a user can cause
prints one line on stderr, `keras-rnnattn COMMAND: error: ...`, and a non-zero
exit status; `--traceback` shows the Python traceback and the backend's own
log instead.
"""

import argparse
import contextlib
import importlib
import logging
import os
import re
import subprocess
import sys
import unicodedata
import warnings

from keras_rnnattn._cli_lines import FAILED, map_lines, progress, report_error

PROG = "keras-rnnattn"
# `export --format`: `keras_rnnattn.export.FORMATS`, written out here because
# argument parsing imports no Keras (tests/test_cli.py checks they agree).
_EXPORT_FORMATS = ("tf_saved_model", "litert", "onnx", "saved_model", "tflite")

# The text method each command calls, and the command for each method.
_COMMAND_OF_METHOD = {
    "translate": "translate",
    "classify": "classify",
    "tag": "tag",
    "generate": "generate",
}


class _CommandError(Exception):
    """A failure explained in one line; `code` is the exit status."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


# --- The backend, imported quietly ------------------------------------------------------
@contextlib.contextmanager
def _native_stderr_silenced():
    """Sends what is written to file descriptor 2 meanwhile to /dev/null.

    TensorFlow's native libraries log through absl before `absl::InitializeLog`
    is called, so their lines ("All log messages before absl::InitializeLog()
    is called are written to STDERR", "Could not find cuda drivers") ignore
    `TF_CPP_MIN_LOG_LEVEL` and go straight to file descriptor 2 while the
    library loads. Nothing but redirecting the descriptor keeps them out.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (AttributeError, OSError, ValueError):  # no stderr to protect
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        yield
    finally:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _import_backend(verbose=False):
    """Imports Keras and its backend without their log lines on stderr.

    Args:
        verbose: bool, keep the backend's log (for `--traceback`).
    """
    if "keras" not in sys.modules:
        from keras_rnnattn._extras import missing_backend_message

        message = missing_backend_message()
        if message is not None:
            raise _CommandError(message, code=1)
    if "keras" in sys.modules or verbose:
        import keras  # noqa: F401

        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's C++ log
    with _native_stderr_silenced():
        import keras  # noqa: F401 (imports the backend: TensorFlow, JAX or torch)
    # Python-side loggers (TensorFlow's tf_logging, absl, JAX): errors only.
    for name in ("tensorflow", "absl", "jax", "jax._src.xla_bridge"):
        logging.getLogger(name).setLevel(logging.ERROR)
    absl_logging = sys.modules.get("absl.logging")
    if absl_logging is not None:
        absl_logging.set_verbosity(absl_logging.ERROR)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Python warnings as one line each: `keras-rnnattn: warning: ...`."""
    text = " ".join(str(message).split())
    print(f"{PROG}: warning: {text}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, exit status 2."""

    def error(self, message):
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# --- Argument types ------------------------------------------------------------------
def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a float >= 0, got {text!r}")
    return value


def _probability(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a float in (0, 1], got {text!r}")
    return value


# --- Input and output ------------------------------------------------------------------
def _read_texts(texts):
    """The texts given as arguments, else the lines of stdin (newlines removed)."""
    if texts:
        return list(texts)
    if sys.stdin is None:
        raise _CommandError("no text given and no stdin to read texts from")
    if sys.stdin.isatty():
        print("Reading texts from stdin, one per line (Ctrl-D ends).", file=sys.stderr)
    return [line.rstrip("\r\n") for line in sys.stdin]


def _map_texts(args, texts, function, what, name="line"):
    """`function(batch) -> list` over the non-blank texts, in batches of
    `args.batch_size`: `(results, failed)` as `_cli_lines.map_lines` gives them.

    A text the model refuses gets one error line on stderr (`... error: line 3:
    ...`) and `FAILED` in the results; the others go on (with `--traceback`
    the first refusal raises).
    """

    def on_error(index, error):
        if args.traceback:
            raise error
        report_error(PROG, args.command, f"{name} {index + 1}", error)

    return map_lines(texts, function, args.batch_size, what, on_error)


def _line(result):
    """The output line of a result: empty for a blank or refused text."""
    return "" if result is None or result is FAILED else result


def _find(preset):
    """The folder of a preset (name or path), found without importing Keras."""
    from keras_rnnattn.preset_catalog import find_preset

    return find_preset(preset)


def _load(args, method):
    """Loads the preset of `args.preset` and checks that its model has `method`."""
    preset = args.preset
    path = _find(preset)
    _import_backend(verbose=args.traceback)
    from keras_rnnattn.presets import load_preset

    model = load_preset(path)
    contract = _contract(model)
    if contract is None or not contract.has(method):
        commands = [
            command
            for name, command in _COMMAND_OF_METHOD.items()
            if contract is not None and contract.has(name)
        ]
        hint = (
            f"use `{PROG} {' or '.join(commands)}`"
            if commands
            else "it has none of " + ", ".join(f"{m}()" for m in _COMMAND_OF_METHOD)
        )
        raise _CommandError(
            f"preset {preset!r} holds a model of class {type(model).__name__}, "
            f"which has no {method}(): {hint}"
        )
    return model


def _contract(model):
    """The `TaskContract` the model's class declares (`task_contract`, as every
    model of `keras_rnnattn.models` does), or None."""
    from keras_rnnattn.models.task_contract import TaskContract

    contract = getattr(type(model), "task_contract", None)
    return contract if isinstance(contract, TaskContract) else None


def _numbered(path, index, count):
    """`attention.png` for one text; `attention-1.png`, `attention-2.png`... for more."""
    root, ext = os.path.splitext(path)
    if count == 1:
        return path if ext else path + ".png"  # matplotlib would add it too
    return f"{root}-{index + 1}{ext or '.png'}"


# --- Commands --------------------------------------------------------------------------
def _size(n_bytes):
    """`532 B`, `85.9 kB`, `11.9 MB`."""
    if n_bytes < 1000:
        return f"{n_bytes} B"
    if n_bytes < 1000**2:
        return f"{n_bytes / 1000:.1f} kB"
    return f"{n_bytes / 1000**2:.1f} MB"


def _count(n):
    """`812`, `41.3k`, `5.5M`."""
    if n < 1000:
        return str(n)
    if n < 1000**2:
        return f"{n / 1000:.1f}k"
    return f"{n / 1000**2:.1f}M"


def _cmd_presets(args):
    from keras_rnnattn.preset_catalog import (
        PRESETS_ENV,
        headline_metric,
        preset_details,
        preset_dirs,
    )

    details = preset_details()
    if args.json:
        import json

        print(json.dumps(details, indent=1, ensure_ascii=False))
        return 0
    if not details:
        searched = ", ".join(preset_dirs()) or "no preset folder exists"
        print(f"No presets found ({searched}). Add folders with {PRESETS_ENV}.")
        return 0
    rows = [("name", "class", "test result", "parameters", "size")]
    for name, entry in details.items():
        metadata = entry["metadata"]
        metric = headline_metric(metadata.get("metrics"))
        params = metadata.get("parameter_count")
        rows.append(
            (
                name,
                str(metadata.get("class_name") or "?"),
                f"{metric[0]} {metric[1]:.4g}" if metric else "-",
                _count(params) if isinstance(params, int) else "?",
                _size(entry["bytes"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        print("  ".join(cells).rstrip())
    return 0


def _cmd_translate(args):
    if args.attention:
        folder = os.path.dirname(os.path.abspath(args.attention))
        if not os.path.isdir(folder):
            raise _CommandError(
                f"cannot write the attention plot {args.attention}: there is no "
                f"folder {folder} (create it first)"
            )
    model = _load(args, "translate")
    texts = _read_texts(args.texts)
    # The penalties not given are the model's: those the preset's recipe
    # chose, as in Python and export (greedy search has none).
    kwargs = {
        "beam_size": args.beam,
        "max_length": args.max_length,
        "length_penalty": args.length_penalty,
        "coverage_penalty": args.coverage_penalty,
    }
    if args.keep_unknown:
        kwargs["replace_unknown"] = False
    results, failed = _map_texts(
        args, texts, lambda batch: list(model.translate(batch, **kwargs)), "translated"
    )
    for result in results:
        print(_line(result), flush=True)
    if args.attention:
        if not _contract(model).has("plot_attention"):
            raise _CommandError(
                f"preset {args.preset!r} holds a model of class "
                f"{type(model).__name__}, which has no plot_attention()"
            )
        options = _contract(model).options("plot_attention")
        plot_kwargs = {name: kwargs[name] for name in options if name in kwargs}
        shown = [t for t, r in zip(texts, results) if t.strip() and r is not FAILED]
        for i, text in enumerate(shown):
            path = _numbered(args.attention, i, len(shown))
            figure = model.plot_attention(text, **plot_kwargs)
            figure.savefig(path, bbox_inches="tight", dpi=150)
            print(f"attention written to {path}", file=sys.stderr)
    return 1 if failed else 0


_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def _cmd_pronounce(args):
    from keras_rnnattn.text import fold_letters

    model = _load(args, "translate")
    # The letters the model reads (a model without a tokenizer reads any).
    tokenizer = getattr(model, "source_tokenizer", None)
    known = getattr(tokenizer, "vocabulary", None)
    # A preset that reads lowercase (cmudict_g2p) prints each word lowercased
    # once; one that keeps case (misaki_us_g2p: names) reads words as written.
    lower = getattr(tokenizer, "lowercase", True)
    words, spellings, refused = [], {}, []
    for text in _read_texts(args.texts):
        for chunk in text.split():
            found = [w.lower() if lower else w for w in _WORD.findall(chunk)]
            rest = _WORD.sub("", chunk)
            # What is neither a word nor punctuation (an emoji, a digit).
            rest = "".join(c for c in rest if not unicodedata.category(c)[0] == "P")
            for word in found:
                spelling = word if known is None else fold_letters(word, known)
                if spelling is None:
                    refused.append(word)
                else:
                    words.append(word)
                    spellings[word] = spelling
            if rest:
                refused.append(rest)
    words = list(dict.fromkeys(words))  # each word once, in first-seen order
    letters = "letters" if known is None else "".join(sorted(_letters(known)))
    for word in dict.fromkeys(refused):
        print(
            f"{PROG} pronounce: warning: {word!r} not pronounced: the preset reads "
            f"words of {letters} (accented letters are folded to their base letters)",
            file=sys.stderr,
        )
    if not words and not refused:
        raise _CommandError("no word given: pass words of letters (and apostrophes)")
    if not words:
        return 1
    results, failed = _map_texts(
        args,
        [spellings[word] for word in words],
        lambda batch: list(model.translate(batch, beam_size=args.beam)),
        "pronounced",
        name="word",
    )
    for word, phonemes in zip(words, results):
        print(f"{word} {_line(phonemes)}".rstrip(), flush=True)
    return 1 if failed else 0


def _letters(vocabulary):
    """The one-character tokens of a vocabulary (a character model's letters)."""
    return [token for token in vocabulary.tokens if len(token) == 1]


def _cmd_punctuate(args):
    model = _load(args, "restore_punctuation")
    results, failed = _map_texts(
        args,
        _read_texts(args.texts),
        lambda batch: list(model.restore_punctuation(batch)),
        "punctuated",
    )
    for result in results:
        print(_line(result), flush=True)
    return 1 if failed else 0


def _cmd_classify(args):
    model = _load(args, "classify")
    texts = _read_texts(args.texts)

    def classify(batch):
        labels, probabilities = model.classify(batch)
        return list(zip(labels, probabilities))

    results, failed = _map_texts(args, texts, classify, "classified")
    for result in results:
        if result is None or result is FAILED:
            print("", flush=True)
            continue
        label, probabilities = result
        if isinstance(label, (list, tuple)):
            label = ",".join(str(item) for item in label)
        print(f"{label}\t{float(max(probabilities)):.4f}", flush=True)
    return 1 if failed else 0


def _cmd_tag(args):
    model = _load(args, "tag")
    texts = _read_texts(args.texts)
    results, failed = _map_texts(args, texts, model.tag, "tagged")
    for result in results:
        pairs = [] if result is None or result is FAILED else result
        print(" ".join(f"{token}/{tag}" for token, tag in pairs), flush=True)
    return 1 if failed else 0


def _cmd_generate(args):
    model = _load(args, "generate")
    prompts = args.prompts if args.prompts else _read_texts(None)
    kwargs = {
        "max_length": args.max_length,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
        "seed": args.seed,
    }
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    accepted = _contract(model).options("generate")
    refused = sorted(k for k in kwargs if k not in accepted)
    if refused:
        options = ", ".join("--" + k.replace("_", "-") for k in refused)
        raise _CommandError(
            f"{type(model).__name__}.generate takes no {options}: leave "
            f"{'it' if len(refused) == 1 else 'them'} out"
        )
    failed = 0
    for i, prompt in enumerate(prompts):
        try:
            print(model.generate(prompt, **kwargs), flush=True)
        except ValueError as error:  # this prompt only: the others go on
            if args.traceback:
                raise
            report_error(PROG, args.command, f"line {i + 1}", error)
            print("", flush=True)
            failed += 1
        progress(i + 1, len(prompts) if len(prompts) > 1 else 0, "generated")
    return 1 if failed else 0


def _applications_dir():
    """`applications/` of the source checkout (recipes are not installed)."""
    package = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(package), "applications")


def _cmd_train(args):
    directory = _applications_dir()
    available = []
    if os.path.isdir(directory):
        available = sorted(
            name
            for name in os.listdir(directory)
            if os.path.isfile(os.path.join(directory, name, "train.py"))
        )
    if not os.path.isdir(directory):
        raise _CommandError(
            f"cannot train {args.application!r}: the recipes "
            "(applications/<name>/train.py) come with a source checkout of "
            f"keras-rnnattn, and there is none at {directory}"
        )
    if args.application not in available:
        listed = ", ".join(available) if available else "none"
        raise _CommandError(
            f"unknown application {args.application!r}; available in {directory}: "
            f"{listed}"
        )
    script = os.path.join(directory, args.application, "train.py")
    return subprocess.call([sys.executable, script, *args.args])


def _cmd_export(args):
    path = _find(args.preset)
    _import_backend(verbose=args.traceback)
    try:
        module = importlib.import_module("keras_rnnattn.export")
    except ModuleNotFoundError as error:
        if error.name != "keras_rnnattn.export":
            raise
        module = None
    export_preset = getattr(module, "export_preset", None)
    if export_preset is None:
        raise _CommandError(
            "export is not available in this version of keras_rnnattn "
            "(keras_rnnattn.export.export_preset is missing)",
            code=1,
        )
    options = {
        name: getattr(args, name)
        for name in (
            "batch_size",
            "sequence_length",
            "max_length",
            "beam_size",
            "length_penalty",
            "coverage_penalty",
        )
        if getattr(args, name) is not None
    }
    written = export_preset(
        path, args.out, format=args.format, quantize=args.quantize, **options
    )
    print(written if written is not None else args.out)
    return 0


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
    p.set_defaults(handler=_cmd_presets)

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
    p.set_defaults(handler=_cmd_translate)

    p = commands.add_parser(
        "pronounce",
        help="spell out the pronunciation of words: `word PH ON EH M Z`, one line "
        "per distinct word (CMUdict's format)",
    )
    _add_preset(p, default="cmudict_g2p")
    p.add_argument(
        "--beam", type=_positive_int, default=1, metavar="N", help="beam size"
    )
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=_cmd_pronounce)

    p = commands.add_parser(
        "punctuate",
        help="restore punctuation and capitals of lowercase, unpunctuated text "
        "with a punctuation tagger",
    )
    _add_preset(p, default="punctuation_en")
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=_cmd_punctuate)

    p = commands.add_parser("classify", help="classify texts: label and probability")
    _add_preset(p)
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=_cmd_classify)

    p = commands.add_parser("tag", help="tag every token: token/TAG")
    _add_preset(p)
    _add_batch_size(p)
    p.add_argument("texts", nargs="*", metavar="TEXT")
    p.set_defaults(handler=_cmd_tag)

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
    p.set_defaults(handler=_cmd_generate)

    p = commands.add_parser(
        "train",
        help="run an application's recipe, applications/APPLICATION/train.py",
    )
    p.add_argument("application", metavar="APPLICATION")
    p.add_argument(
        "args", nargs=argparse.REMAINDER, help="passed on to the recipe's train.py"
    )
    p.set_defaults(handler=_cmd_train)

    p = commands.add_parser(
        "export", help="export a preset as SavedModel, TFLite or ONNX"
    )
    _add_preset(p)
    p.add_argument(
        "--format",
        required=True,
        choices=_EXPORT_FORMATS,
        help="Keras's names tf_saved_model, litert and onnx (they need "
        'pip install "keras-rnnattn[tensorflow]", "keras-rnnattn[export]" and '
        '"keras-rnnattn[onnx]"); saved_model and tflite are the same as the '
        "first two",
    )
    p.add_argument(
        "--quantize", action="store_true", help="quantize the weights (litert)"
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
    p.set_defaults(handler=_cmd_export)
    return parser


def main(argv=None):
    """Runs the `keras-rnnattn` command.

    Args:
        argv: list of str, the arguments (default: `sys.argv[1:]`).

    Returns:
        int, the exit status: 0 on success, 2 for bad arguments, bad inputs
        and unknown presets or applications, 1 for other failures (files,
        folders, missing packages); each failure prints one line on stderr
        and no traceback (unless `--traceback`). `train` returns the recipe's
        status.

    Example:

    >>> main(["--version"])  # doctest: +ELLIPSIS
    keras-rnnattn ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its message
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.version:
        from keras_rnnattn._version import __version__

        print(f"{PROG} {__version__}")
        return 0
    if args.command is None:
        print(f"{PROG}: error: choose a command (see `{PROG} --help`)", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            if not args.traceback:
                warnings.showwarning = _show_warning
            return args.handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): stop quietly, and keep
        # Python's final flush of stdout from failing again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except Exception as error:
        if args.traceback:
            raise
        code, message = _explain(error)
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return code


def _explain(error):
    """`(exit status, one-line message)` for an exception."""
    if isinstance(error, _CommandError):
        code, message = error.code, str(error)
    elif isinstance(error, ValueError):  # bad input, unknown or broken preset
        code, message = 2, str(error)
    elif isinstance(error, OSError) and error.strerror:  # files and folders
        code, message = 1, error.strerror
        if error.filename is not None:
            message += f": {error.filename}"
    elif isinstance(error, (ImportError, RuntimeError, OSError)):
        code, message = 1, str(error)
    else:
        code = 1
        message = f"{type(error).__name__}: {error} (run with --traceback to see where)"
    return code, " ".join(message.split()) or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
