"""The handlers of the `keras-rnnattn` commands, `cmd_<command>(args) -> exit
status`, and what they share: reading texts, loading a preset, printing results."""

import importlib
import os
import subprocess
import sys

from keras_rnnattn.cli.backend import PROG, CommandError, import_backend
from keras_rnnattn.cli.lines import FAILED, map_lines, progress, report_error

# The text method each command calls, and the command for each method.
_COMMAND_OF_METHOD = {
    "translate": "translate",
    "classify": "classify",
    "tag": "tag",
    "generate": "generate",
}


# --- Input and output ------------------------------------------------------------------
def _read_texts(texts):
    """The texts given as arguments, else the lines of stdin (newlines removed)."""
    if texts:
        return list(texts)
    if sys.stdin is None:
        raise CommandError("no text given and no stdin to read texts from")
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
    from keras_rnnattn.presets.catalog import find_preset

    return find_preset(preset)


def _load(args, method):
    """Loads the preset of `args.preset` and checks that its model has `method`."""
    preset = args.preset
    path = _find(preset)
    import_backend(verbose=args.traceback)
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
        raise CommandError(
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


def cmd_presets(args):
    from keras_rnnattn.presets.catalog import (
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


def cmd_translate(args):
    if args.attention:
        folder = os.path.dirname(os.path.abspath(args.attention))
        if not os.path.isdir(folder):
            raise CommandError(
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
            raise CommandError(
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


def _restore_lines(args, method, what):
    """Prints `model.<method>` of each line (a tagger's string-in, string-out
    method); a tagger of other tags is refused before any line is read."""
    model = _load(args, method)
    restore = getattr(model, method)
    try:
        restore([])
    except ValueError as error:
        raise CommandError(f"preset {args.preset!r}: {error}") from None
    results, failed = _map_texts(
        args, _read_texts(args.texts), lambda batch: list(restore(batch)), what
    )
    for result in results:
        print(_line(result), flush=True)
    return 1 if failed else 0


def cmd_punctuate(args):
    return _restore_lines(args, "restore_punctuation", "punctuated")


def cmd_diacritics(args):
    return _restore_lines(args, "restore_diacritics", "restored")


def cmd_classify(args):
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


def cmd_tag(args):
    model = _load(args, "tag")
    texts = _read_texts(args.texts)
    results, failed = _map_texts(args, texts, model.tag, "tagged")
    for result in results:
        pairs = [] if result is None or result is FAILED else result
        print(" ".join(f"{token}/{tag}" for token, tag in pairs), flush=True)
    return 1 if failed else 0


def cmd_generate(args):
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
        raise CommandError(
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


def applications_dir():
    """`applications/` of the source checkout (recipes are not installed)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(os.path.dirname(package), "applications")


def cmd_train(args):
    directory = applications_dir()
    available = []
    if os.path.isdir(directory):
        available = sorted(
            name
            for name in os.listdir(directory)
            if os.path.isfile(os.path.join(directory, name, "train.py"))
        )
    if not os.path.isdir(directory):
        raise CommandError(
            f"cannot train {args.application!r}: the recipes "
            "(applications/<name>/train.py) come with a source checkout of "
            f"keras-rnnattn, and there is none at {directory}"
        )
    if args.application not in available:
        listed = ", ".join(available) if available else "none"
        raise CommandError(
            f"unknown application {args.application!r}; available in {directory}: "
            f"{listed}"
        )
    script = os.path.join(directory, args.application, "train.py")
    return subprocess.call([sys.executable, script, *args.args])


def export_search(path, args):
    """`--beam`, `--length-penalty` and `--coverage-penalty` of `export` as the
    preset's search settings with them changed; None where none is given."""
    given = {
        name: getattr(args, name)
        for name in ("beam_size", "length_penalty", "coverage_penalty")
        if getattr(args, name) is not None
    }
    if not given:
        return None
    from keras_rnnattn.decoding.search_settings import SearchSettings
    from keras_rnnattn.presets.catalog import preset_metadata

    base = SearchSettings.from_metadata(preset_metadata(path))
    beam = {"method": "beam", "beam_size": given.pop("beam_size", 4)}
    return base.replace(**beam, **given)


def cmd_export(args):
    path = _find(args.preset)
    import_backend(verbose=args.traceback)
    try:
        module = importlib.import_module("keras_rnnattn.export")
    except ModuleNotFoundError as error:
        if error.name != "keras_rnnattn.export":
            raise
        module = None
    export_preset = getattr(module, "export_preset", None)
    if export_preset is None:
        raise CommandError(
            "export is not available in this version of keras_rnnattn "
            "(keras_rnnattn.export.export_preset is missing)",
            code=1,
        )
    options = {
        name: getattr(args, name)
        for name in ("batch_size", "sequence_length", "max_length")
        if getattr(args, name) is not None
    }
    search = export_search(path, args)
    if search is not None:
        options["search"] = search
    written = export_preset(
        path, args.out, format=args.format, quantize=args.quantize, **options
    )
    print(written if written is not None else args.out)
    return 0
