"""The command line's one-line failures (`CommandError`) and its import of
Keras and the backend without their log lines on stderr."""

import contextlib
import logging
import os
import sys

PROG = "keras-rnnattn"


class CommandError(Exception):
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


def import_backend(verbose=False):
    """Imports Keras and its backend without their log lines on stderr.

    Args:
        verbose: bool, keep the backend's log (for `--traceback`).
    """
    if "keras" not in sys.modules:
        from keras_rnnattn._extras import missing_backend_message

        message = missing_backend_message()
        if message is not None:
            raise CommandError(message, code=1)
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
