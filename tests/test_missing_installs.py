"""With CI=true a skip for something not installed fails; other skips stay skips."""

import os
import subprocess
import sys
import textwrap

from tests.backends import on_one_backend
from tests.missing_installs import ci_requires_installs, is_missing_install

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_reasons_that_name_an_install_are_told_apart():
    assert is_missing_install("corpus not installed: apt-get install trans-de-en")
    assert is_missing_install("could not import 'tf2onnx': No module named 'tf2onnx'")
    assert is_missing_install("no headless Chromium and chromedriver on PATH")
    assert not is_missing_install("the fused kernel is torch's")
    assert ci_requires_installs({"CI": "true"}) and ci_requires_installs({"CI": "1"})
    assert not ci_requires_installs({}) and not ci_requires_installs({"CI": "false"})


@on_one_backend
def test_the_guard_bites_under_ci(tmp_path):
    # A test file outside the suite (another backend's run collects tests/ at
    # the same time), with the plugin: one skip for a missing corpus, one for
    # another reason.
    (tmp_path / "test_guard.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_corpus():
                pytest.skip("corpus not installed: apt-get install fortunes")

            def test_backend():
                pytest.skip("the in-place update is torch's")
            """
        )
    )
    outputs = {}
    for ci in ("true", ""):
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-p", "tests.missing_installs", "--rootdir", str(tmp_path),
             "-c", os.devnull, str(tmp_path / "test_guard.py")],
            cwd=REPO,
            env={**os.environ, "CI": ci, "PYTHONPATH": REPO},
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
        outputs[ci] = result.stdout.strip().splitlines()[-1]
    assert "1 failed, 1 skipped" in outputs["true"], outputs
    assert "2 skipped" in outputs[""], outputs
