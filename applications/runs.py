"""The recipes' training runs: `--init-from`, `--resume`, `--minutes`,
`--average-last` and `--run-dir`, on `keras_rnnattn.training`'s `TrainingRun`."""

import argparse
import datetime
import json
import os
import sys
import tempfile

from keras_rnnattn.presets import load_preset, preset_tokenizers
from keras_rnnattn.training import TrainingRun, fit_best, init_from, training_history
from keras_rnnattn.training.training_run import RUN_FILE

# Options of one call, not of the run: left out of the options a run records.
CALL_OPTIONS = ("--resume", "--minutes", "--run-dir")


class RecipeParser(argparse.ArgumentParser):
    """An `ArgumentParser` for which `--resume RUN_DIR` means: the options the
    run in RUN_DIR was started with, then the ones given now (the last one
    given wins). `args.run_options` holds the options a new run records."""

    def parse_args(self, args=None, namespace=None):
        argv = list(sys.argv[1:] if args is None else args)
        resume = _value_of(argv, "--resume")
        if resume is not None:
            path = os.path.join(resume, RUN_FILE)
            if not os.path.isfile(path):
                self.error(
                    f"--resume {resume}: no training run there (no {RUN_FILE}); "
                    "a run's folder is the --run-dir a recipe printed"
                )
            with open(path, encoding="utf-8") as file:
                argv = list(json.load(file)["options"] or []) + argv
        parsed = super().parse_args(argv, namespace)
        parsed.run_options = _without_call_options(argv)
        return parsed


def add_run_options(parser):
    """The options of a training run that can go on over several calls."""
    group = parser.add_argument_group("training runs")
    group.add_argument(
        "--init-from",
        default=None,
        metavar="PRESET_OR_FOLDER",
        help="start from this preset's weights (a name, a folder or an hf:// "
        "handle) with a fresh optimizer and this recipe's schedule",
    )
    group.add_argument(
        "--run-dir",
        default=None,
        help="the run's folder of checkpoints (default runs/<name>-<UTC time>-<pid>)",
    )
    group.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="go on with the run in RUN_DIR where it stopped, with its options",
    )
    group.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="this call's training minutes (the run goes on with --resume)",
    )
    group.add_argument(
        "--average-last",
        type=int,
        default=1,
        metavar="K",
        help="keep the last K epochs and ship their average when it validates "
        "better than the best epoch",
    )
    return parser


def start_tokenizers(args):
    """The tokenizers of the `--init-from` preset (by attribute name), which a
    model must use to start from its weights; None without `--init-from`."""
    if not args.init_from:
        return None
    return preset_tokenizers(load_preset(args.init_from))


def fit_run(
    args, name, model, x=None, y=None, *, callbacks, extend_vocabulary=False, **kwargs
):
    """`fit_best` in a `TrainingRun`: a new one (from `--init-from`'s weights
    when given) or the `--resume`d one; the run's folder is printed.

    `extend_vocabulary`: the model's vocabularies may go on past the
    `--init-from` preset's (`init_from`'s option).

    Returns `fit_best`'s metrics (with `training_history`)."""
    if args.average_last < 1:
        raise ValueError(f"--average-last must be >= 1. Received: {args.average_last}")
    if args.resume:
        run = TrainingRun(args.resume, resume=True, keep_last=args.average_last)
    else:
        start, history = "fresh", []
        if args.init_from:
            history = training_history(
                init_from(model, args.init_from, extend_vocabulary=extend_vocabulary)
            )
            start = f"preset {args.init_from}"
        run = TrainingRun(
            args.run_dir or default_run_dir(name, args.quick),
            keep_last=args.average_last,
            options=args.run_options,
            start_weights=start,
            history=history,
        )
    print(f"training run: {run.folder} (go on with --resume {run.folder})", flush=True)
    return fit_best(model, x, y, callbacks=callbacks, run=run, **kwargs)


def default_run_dir(name, quick=False):
    """runs/<name>-<UTC time>-<process id> (in a temporary folder for a
    `--quick` run)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = f"{now.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    if quick:
        return os.path.join(tempfile.mkdtemp(), f"{name}-{stamp}")
    return os.path.join("runs", f"{name}-{stamp}")


def _value_of(argv, option):
    value = None
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(option + "="):
            value = arg.split("=", 1)[1]
    return value


def _without_call_options(argv):
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in CALL_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(option + "=" for option in CALL_OPTIONS)):
            kept.append(arg)
    return kept
