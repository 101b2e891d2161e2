"""Runs a model card's code in a Python where Keras, TensorFlow, JAX, torch and
this package can't be imported, as a user's program without them would."""

import json
import os
import subprocess
import sys

BLOCKER = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"keras", "tensorflow", "jax", "torch", "keras_rnnattn"}:
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Blocked())
"""


def run_without_keras(code, timeout=300):
    """Runs `code` behind `BLOCKER`; returns the JSON its last line prints.

    Fails the test (with the end of stderr) when the code exits non-zero.
    """
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER + code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def card_block(card, introduction):
    """The first python block of a card after the text `introduction`."""
    import re

    with open(card, encoding="utf-8") as f:
        text = f.read()
    start = text.index(introduction)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)
