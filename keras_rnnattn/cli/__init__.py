"""The `keras-rnnattn` command: presets, translate, classify, tag, generate, train, export.

Commands that need no model (`presets`, `--help`, argument errors, unknown
presets) import neither Keras nor a backend. Every failure a user can cause
prints one line on stderr, `keras-rnnattn COMMAND: error: ...`, and a non-zero
exit status; `--traceback` shows the Python traceback and the backend's own
log instead.
"""

import os
import sys
import warnings

from keras_rnnattn.cli.backend import PROG, CommandError
from keras_rnnattn.cli.parser import build_parser

__all__ = ["build_parser", "main"]


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Python warnings as one line each: `keras-rnnattn: warning: ...`."""
    text = " ".join(str(message).split())
    print(f"{PROG}: warning: {text}", file=sys.stderr)


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
    if isinstance(error, CommandError):
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
