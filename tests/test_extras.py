"""One-backend installs: what is missing is named with the extra that brings it.

The default tests make a package look missing to `keras_rnnattn._extras` (the
one place the package asks what is installed); the slow test installs the
package with `[jax]` alone into a fresh virtual environment and runs the demo,
the commands and every export format there.
"""

import os
import subprocess
import sys
import textwrap
import venv

import pytest

from keras_rnnattn import _extras, demo
from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def without(monkeypatch):
    """`without("tensorflow", ...)`: those packages look not installed."""

    def hide(*modules):
        found = _extras.installed
        monkeypatch.setattr(
            _extras, "installed", lambda module: module not in modules and found(module)
        )

    return hide


def test_a_missing_backend_names_its_extra_and_the_installed_ones(
    without, monkeypatch, tmp_path
):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no keras.json: TensorFlow
    without("tensorflow")
    message = _extras.missing_backend_message()
    assert message.startswith("Keras's backend 'tensorflow' is not installed")
    assert "KERAS_BACKEND is not set" in message
    assert 'pip install ".[tensorflow]"' in message
    assert "set KERAS_BACKEND=jax or KERAS_BACKEND=torch (installed)" in message
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert _extras.missing_backend_message() is None
    without("jax", "tensorflow", "torch")
    message = _extras.missing_backend_message()
    assert "KERAS_BACKEND is set to it" in message
    assert 'install one: pip install ".[jax]"' in message


@pytest.mark.parametrize(
    "format, extra",
    [("tf_saved_model", "tensorflow"), ("litert", "export"), ("onnx", "onnx")],
)
def test_export_without_tensorflow_names_the_formats_extra(without, format, extra):
    from keras_rnnattn.export import export_model
    from keras_rnnattn.models import AttentionClassifier

    model = AttentionClassifier(vocabulary_size=12, num_classes=2, units=4)
    model(__import__("numpy").ones((1, 3), "int32"))
    without("tensorflow")
    options = {"batch_size": 1, "sequence_length": 3} if format == "litert" else {}
    with pytest.raises(ImportError, match="tensorflow") as info:
        export_model(model, "unused", format=format, **options)
    assert f'pip install ".[{extra}]"' in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_the_demo_skips_its_plot_without_matplotlib(without, capsys):
    without("matplotlib")
    assert demo._plot(object(), "unused") is None
    printed = capsys.readouterr().out.strip()
    assert printed == (
        'Attention heat map skipped: it needs matplotlib, pip install ".[plot]"'
    )


def test_the_export_extras_bring_what_export_imports():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    from keras_rnnattn.export import checks as _export_checks

    assert set(_export_checks.ONNX_PACKAGES) <= set(extras["onnx"])
    for format, (extra, _) in _export_checks.EXTRAS.items():
        assert "tensorflow" in extras[extra], format


@on_one_backend
def test_the_command_without_its_backend_is_one_line(tmp_path):
    # A process of its own: the check runs before Keras is imported.
    code = textwrap.dedent(
        """
        import sys
        from keras_rnnattn import _extras
        found = _extras.installed
        _extras.installed = lambda module: module != "tensorflow" and found(module)
        from keras_rnnattn.cli import main
        sys.exit(main(["classify", "--preset", "movie_snippets_sentiment", "good"]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env.update(PYTHONPATH=REPO, KERAS_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "keras-rnnattn classify: error: Keras's backend 'tensorflow' is not "
        "installed (KERAS_BACKEND is not set, and Keras then uses it): set "
        "KERAS_BACKEND=jax or KERAS_BACKEND=torch (installed), or pip install "
        '".[tensorflow]"'
    ]


@pytest.mark.slow
@on_one_backend
def test_a_jax_only_install(tmp_path):
    # pip reads this machine's configured package sources (no network needed
    # where they are local); the install takes a few minutes.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [bin_dir / "pip", "install", "-q", f"{REPO}[jax]"],
        check=True,
        capture_output=True,
        timeout=1800,
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "PYTHONPATH")
    }
    env.update(KERAS_HOME=str(tmp_path), HOME=str(tmp_path))

    def run(*argv, stdin="", backend="jax"):
        extra = {"KERAS_BACKEND": backend} if backend else {}
        return subprocess.run(
            [str(a) for a in argv],
            env={**env, **extra},
            cwd=tmp_path,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )

    python, command = bin_dir / "python", bin_dir / "keras-rnnattn"
    assert run(python, "-c", "import tensorflow").returncode != 0  # one backend
    done = run(
        command, "classify", "--preset", "movie_snippets_sentiment", "x", backend=None
    )
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert '".[tensorflow]"' in done.stderr and "KERAS_BACKEND=jax" in done.stderr

    done = run(python, "-m", "keras_rnnattn.demo")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("greedy:") == len(demo.GERMAN)
    assert done.stdout.strip().endswith('pip install ".[plot]"')
    assert done.stderr == ""

    lines = "Ich habe keine Zeit.\n" + "Zeit " * 300 + "\nWo ist der Bahnhof?\n"
    done = run(command, "translate", "--preset", "ding_de_en_bahdanau", stdin=lines)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 3
    assert done.stdout.splitlines()[1] == "" and len(done.stderr.splitlines()) == 1
    for argv, text in [
        (("classify", "--preset", "movie_snippets_sentiment"), "a good film"),
        (("punctuate",), "where is it"),
        (("pronounce",), "café"),
        (("generate", "--preset", "web_bible_char_lm", "--max-new-tokens", "4"), "in"),
    ]:
        done = run(command, *argv, stdin=text + "\n")
        assert done.returncode == 0 and done.stdout.strip() and not done.stderr, argv
    for format, extra in [
        ("tf_saved_model", "tensorflow"),
        ("litert", "export"),
        ("onnx", "onnx"),
    ]:
        done = run(
            command,
            "export",
            "--preset",
            "movie_snippets_sentiment",
            "--format",
            format,
            "out",
        )
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, format
        assert f'pip install ".[{extra}]"' in done.stderr, format


@on_one_backend
def test_the_python_api_says_a_missing_backend_in_one_line(tmp_path):
    # The same message as the CLI's, raised before Keras runs, where Keras's
    # own error is a traceback of some 60 lines.
    code = textwrap.dedent(
        """
        from keras_rnnattn import _extras
        found = _extras.installed
        _extras.installed = lambda module: module != "tensorflow" and found(module)
        from keras_rnnattn.models import Translator
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env.update(PYTHONPATH=REPO, KERAS_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(
        "ImportError: Keras's backend 'tensorflow' is not installed (KERAS_BACKEND "
        "is not set, and Keras then uses it): set KERAS_BACKEND=jax"
    )
    assert len(lines) < 25, done.stderr
