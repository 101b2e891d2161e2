"""The `keras-rnnattn` command on tiny presets made here."""

import io
import json
import os
import subprocess
import sys
import types

import pytest

from keras_rnnattn import cli, presets
from tests.preset_test_models import (
    TinyClassifier,
    TinyGenerator,
    TinyTagger,
    TinyTranslator,
    fitted_tokenizer,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def preset_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("presets")
    TinyClassifier(tokenizer=fitted_tokenizer()).save_to_preset(
        root / "tiny_clf",
        {"description": "says neg or pos", "metrics": {"accuracy": 0.5}},
    )
    TinyTranslator().save_to_preset(root / "tiny_tr", {"description": "reverses"})
    TinyTranslator().save_to_preset(
        root / "tiny_tr_alpha",
        {"description": "reverses", "metrics": {"beam_length_penalty": 0.8}},
    )
    TinyGenerator().save_to_preset(root / "tiny_gen", {"description": "echoes"})
    TinyTagger().save_to_preset(root / "tiny_tag", {"description": "tags"})
    return root


@pytest.fixture
def run(preset_root, monkeypatch, capsys):
    """`run(*argv, stdin=None) -> (exit code, stdout, stderr)` of `cli.main`."""
    monkeypatch.setenv(presets.PRESETS_ENV, str(preset_root))

    def run_(*argv, stdin=None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run_


def assert_one_line_error(code, err, expected_code=2):
    assert code == expected_code
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


# --- presets ---------------------------------------------------------------------------
def test_presets_prints_a_table(run, preset_root):
    code, out, err = run("presets")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["name", "class", "parameters", "metrics", "description"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert {"tiny_clf", "tiny_tr", "tiny_gen", "tiny_tag"} <= set(rows)
    params = TinyClassifier().count_params()
    assert rows["tiny_clf"].split()[:3] == ["tiny_clf", "TinyClassifier", str(params)]
    assert "accuracy 0.5" in rows["tiny_clf"]
    assert rows["tiny_clf"].endswith("says neg or pos")
    # The columns line up: every description starts at the same place.
    starts = {
        rows[n].index(d) for n, d in [("tiny_tr", "reverses"), ("tiny_tag", "tags")]
    }
    assert len(starts) == 1


def test_presets_when_there_are_none(run, monkeypatch, tmp_path):
    monkeypatch.setattr(presets, "_PACKAGE_DIR", str(tmp_path / "pkg"))
    monkeypatch.setenv(presets.PRESETS_ENV, str(tmp_path / "empty"))
    code, out, _ = run("presets")
    assert code == 0
    assert out.startswith("No presets found (no preset folder exists).")


def test_presets_json_is_list_presets(run):
    code, out, _ = run("presets", "--json")
    assert code == 0
    assert json.loads(out) == presets.list_presets()


# --- translate ---------------------------------------------------------------------------
def test_translate_arguments_and_options(run):
    code, out, err = run("translate", "--preset", "tiny_tr", "a b c", "x y")
    assert code == 0, err
    assert out == "c b a (beam 1)\ny x (beam 1)\n"
    code, out, _ = run("translate", "--preset", "tiny_tr", "--beam", "4", "a b")
    assert out == "b a (beam 4)\n"
    code, out, _ = run(
        "translate",
        "--preset",
        "tiny_tr",
        "--beam",
        "4",
        "--length-penalty",
        "0.6",
        "a",
    )
    assert out == "a (beam 4, alpha 0.6)\n"
    code, out, _ = run("translate", "--preset", "tiny_tr", "--max-length", "3", "a b")
    assert out == "b a\n"


def test_translate_beam_defaults_to_the_presets_validated_length_penalty(run):
    code, out, err = run("translate", "--preset", "tiny_tr_alpha", "--beam", "4", "a")
    assert code == 0, err
    assert out == "a (beam 4, alpha 0.8)\n"
    # Greedy search has no length penalty; an explicit one wins.
    _, out, _ = run("translate", "--preset", "tiny_tr_alpha", "a b")
    assert out == "b a (beam 1)\n"
    argv = ("translate", "--preset", "tiny_tr_alpha", "--beam", "4")
    _, out, _ = run(*argv, "--length-penalty", "0", "a")
    assert out == "a (beam 4)\n"
    # A preset whose metadata records no α beams without one.
    _, out, _ = run("translate", "--preset", "tiny_tr", "--beam", "4", "a")
    assert out == "a (beam 4)\n"
    code, _, err = run(*argv, "--length-penalty", "-1", "a")
    assert code == 2 and "expected a float >= 0" in err


def test_translate_reads_stdin_and_keeps_blank_lines_aligned(run):
    calls = []
    original = TinyTranslator.translate

    def counting(self, texts, **kwargs):
        calls.append(list(texts))
        return original(self, texts, **kwargs)

    TinyTranslator.translate = counting
    try:
        code, out, err = run(
            "translate",
            "--preset",
            "tiny_tr",
            "--batch-size",
            "2",
            stdin="a b\n\nc d\r\ne f\n",
        )
    finally:
        TinyTranslator.translate = original
    assert code == 0, err
    assert out.split("\n") == ["b a (beam 1)", "", "d c (beam 1)", "f e (beam 1)", ""]
    assert calls == [["a b", "c d"], ["e f"]]  # batches of 2, blank lines skipped


def test_progress_goes_to_a_terminal_stderr_only(run, monkeypatch):
    argv = ("translate", "--preset", "tiny_tr", "--batch-size", "2", "a", "b", "c")
    code, out, err = run(*argv)
    assert code == 0 and err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out2, err = run(*argv)
    assert out2 == out  # stdout holds the translations only
    assert err == "\rtranslated: 2/3\rtranslated: 3/3\n"


def test_translate_writes_attention_plots(run, tmp_path):
    one = tmp_path / "one.png"
    code, _, err = run(
        "translate", "--preset", "tiny_tr", "--attention", str(one), "a b"
    )
    assert code == 0, err
    assert one.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    many = tmp_path / "many.png"
    code, _, err = run(
        "translate", "--preset", "tiny_tr", "--attention", str(many), "a b", "c d e"
    )
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["many-1.png", "many-2.png", "one.png"]
    assert "many-2.png" in err


# --- classify, tag, generate -------------------------------------------------------------
def test_classify_prints_label_and_probability(run, preset_root):
    texts = ["a gorgeous movie", "a dull film", "so so"]
    code, out, err = run("classify", "--preset", "tiny_clf", *texts)
    assert code == 0, err
    labels, probabilities = TinyClassifier.from_preset("tiny_clf").classify(texts)
    expected = [f"{label}\t{p.max():.4f}" for label, p in zip(labels, probabilities)]
    assert out.splitlines() == expected


def test_classify_reads_stdin(run):
    code, out, _ = run("classify", "--preset", "tiny_clf", stdin="a gorgeous movie\n")
    assert code == 0
    assert out.split("\t")[0] in ("neg", "pos")
    assert len(out.splitlines()) == 1


def test_tag_prints_token_slash_tag(run):
    code, out, err = run("tag", "--preset", "tiny_tag", "the cat is a cat")
    assert code == 0, err
    assert out == "the/N cat/N is/X a/X cat/N\n"


def test_generate_passes_the_sampling_options(run):
    code, out, err = run(
        "generate",
        "--preset",
        "tiny_gen",
        "--max-length",
        "5",
        "--temperature",
        "0.5",
        "--top-k",
        "3",
        "--top-p",
        "0.9",
        "--seed",
        "7",
        "once upon",
    )
    assert code == 0, err
    assert out == "once upon | max_length=5 temperature=0.5 top_k=3 top_p=0.9 seed=7\n"
    # Options not given are not passed: the model's defaults apply.
    code, out, _ = run("generate", "--preset", "tiny_gen", stdin="a\nb\n")
    assert out.splitlines() == [
        f"{p} | max_length=None temperature=1.0 top_k=None top_p=None seed=None"
        for p in "ab"
    ]


# --- Errors ----------------------------------------------------------------------------------
def test_unknown_preset_is_one_line_listing_the_presets(run):
    code, out, err = run("translate", "--preset", "tiny_trr", "a b")
    assert_one_line_error(code, err)
    assert out == ""
    assert "Unknown preset 'tiny_trr'" in err
    assert "tiny_tr (TinyTranslator)" in err and "tiny_clf (TinyClassifier)" in err


def test_wrong_command_for_the_model_names_the_right_one(run):
    code, _, err = run("classify", "--preset", "tiny_tr", "a b")
    assert_one_line_error(code, err)
    assert "holds a model of class TinyTranslator, which has no classify()" in err
    assert "use `keras-rnnattn translate`" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["translate", "--preset", "tiny_tr", "--beam", "0", "a"],
            "expected an int >= 1",
        ),
        (["generate", "--preset", "tiny_gen", "--top-p", "1.5", "a"], "(0, 1]"),
        (["generate", "--preset", "tiny_gen", "--temperature", "-1", "a"], ">= 0"),
        (["translate", "a b"], "--preset"),
        (["frobnicate"], "invalid choice"),
        (
            ["export", "--preset", "tiny_tr", "--format", "onnx", "out"],
            "invalid choice",
        ),
        ([], "choose a command"),
    ],
)
def test_bad_arguments_exit_2(run, argv, message):
    code, out, err = run(*argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert out == ""


def test_help_and_version_exit_0(run):
    code, out, _ = run("--help")
    assert code == 0 and "translate" in out and "KERAS_RNNATTN_PRESETS" in out
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("keras-rnnattn ")


def test_model_value_errors_are_one_line_unless_traceback(run, monkeypatch):
    def refuse(self, prompt, **kwargs):
        raise ValueError("the prompt has 900 tokens but the model reads at most 64")

    monkeypatch.setattr(TinyGenerator, "generate", refuse)
    code, _, err = run("generate", "--preset", "tiny_gen", "x")
    assert_one_line_error(code, err)
    assert err.startswith("keras-rnnattn generate: error: the prompt has 900 tokens")
    with pytest.raises(ValueError, match="900 tokens"):
        cli.main(["--traceback", "generate", "--preset", "tiny_gen", "x"])


# --- train and export ----------------------------------------------------------------------
@pytest.fixture
def applications(tmp_path, monkeypatch):
    root = tmp_path / "applications"
    os.makedirs(root / "echo")
    (root / "echo" / "train.py").write_text(
        "import json, sys\n"
        "json.dump(sys.argv[1:], open(sys.argv[-1], 'w'))\n"
        "sys.exit(3 if '--fail' in sys.argv else 0)\n"
    )
    os.makedirs(root / "no_recipe")  # no train.py: not an application
    monkeypatch.setattr(cli, "_applications_dir", lambda: str(root))
    return root


def test_train_runs_the_recipe_with_its_arguments(run, applications, tmp_path):
    record = str(tmp_path / "argv.json")
    code, _, err = run("train", "echo", "--epochs", "3", "--beam", "2", record)
    assert code == 0, err
    with open(record) as f:
        assert json.load(f) == ["--epochs", "3", "--beam", "2", record]
    code, _, _ = run("train", "echo", "--fail", record)
    assert code == 3  # the recipe's exit status


def test_train_unknown_application_lists_the_available_ones(run, applications):
    code, _, err = run("train", "nope")
    assert_one_line_error(code, err)
    assert "unknown application 'nope'" in err and err.strip().endswith(": echo")


def test_train_without_a_checkout_says_so(run, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "_applications_dir", lambda: str(tmp_path / "none"))
    code, _, err = run("train", "ding")
    assert_one_line_error(code, err)
    assert "source checkout" in err


def test_export_calls_export_preset(run, monkeypatch, preset_root, tmp_path):
    calls = []

    def export_preset(preset, out, format, quantize, **options):
        calls.append((preset, out, format, quantize, options))
        return out + ".tflite"

    module = types.ModuleType("keras_rnnattn.export")
    module.export_preset = export_preset
    monkeypatch.setitem(sys.modules, "keras_rnnattn.export", module)
    out = str(tmp_path / "model")
    code, stdout, err = run(
        "export", "--preset", "tiny_clf", "--format", "tflite", "--quantize", out
    )
    assert code == 0, err
    assert calls == [(str(preset_root / "tiny_clf"), out, "tflite", True, {})]
    code, _, err = run(
        "export", "--preset", "tiny_clf", "--format", "tflite",
        "--batch-size", "2", "--sequence-length", "16", out,
    )  # fmt: skip
    assert code == 0, err
    assert calls[-1][-1] == {"batch_size": 2, "sequence_length": 16}
    assert stdout == out + ".tflite\n"
    code, _, err = run("export", "--preset", "nope", "--format", "tflite", out)
    assert_one_line_error(code, err)
    assert "Unknown preset 'nope'" in err


def test_export_without_the_export_module_says_so(run, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "keras_rnnattn.export", None)  # import fails
    code, _, err = run(
        "export", "--preset", "tiny_clf", "--format", "saved_model", str(tmp_path)
    )
    assert_one_line_error(code, err, expected_code=1)
    assert "export is not available" in err


# --- As a program ----------------------------------------------------------------------------
def test_runs_as_a_program(preset_root):
    env = dict(os.environ, PYTHONPATH=REPO, **{presets.PRESETS_ENV: str(preset_root)})
    failed = subprocess.run(
        [sys.executable, "-m", "keras_rnnattn.cli", "translate", "--preset", "x", "a"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert failed.returncode == 2
    assert failed.stdout == ""
    assert "Unknown preset 'x'. Available presets: tiny_clf" in failed.stderr
    assert "Traceback" not in failed.stderr
