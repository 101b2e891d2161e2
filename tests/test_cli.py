"""The `keras-rnnattn` command on tiny presets made here."""

import io
import json
import os
import subprocess
import sys
import types

import pytest

from keras_rnnattn import cli, presets
from keras_rnnattn.cli import commands as _cli_commands
from keras_rnnattn.decoding import SearchSettings
from keras_rnnattn.models import SequenceTagger, Translator
from keras_rnnattn.presets import catalog as preset_catalog
from keras_rnnattn.text import (
    PUNCTUATION_TAGS,
    CharTokenizer,
    WordTokenizer,
    strip_diacritics,
    strip_punctuation,
)
from tests.backends import on_one_backend
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
        {"description": "reverses", "search": {"length_penalty": 0.8}},
    )
    TinyGenerator().save_to_preset(root / "tiny_gen", {"description": "echoes"})
    TinyTagger().save_to_preset(root / "tiny_tag", {"description": "tags"})
    # A real (untrained) Translator, which a fresh process loads without the
    # test classes.
    tokenizer = CharTokenizer().fit(["abcd"])
    Translator(
        tokenizer, tokenizer, embedding_dim=4, units=4, max_target_length=6
    ).save_to_preset(root / "real_tr", {"description": "a real translator"})
    SequenceTagger(
        tokenizer=WordTokenizer(lowercase=True).fit(["where is it"]),
        tags=PUNCTUATION_TAGS,
        units=4,
    ).save_to_preset(root / "real_punct", {"description": "an untrained punctuator"})
    SequenceTagger(
        tokenizer=CharTokenizer().fit(["zitra rano"]),
        tags=["none", "acute", "caron"],
        units=4,
    ).save_to_preset(root / "real_marks", {"description": "an untrained restorer"})
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
def test_presets_prints_a_narrow_table(run, preset_root):
    code, out, err = run("presets")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["name", "class", "test", "result", "parameters", "size"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert {"tiny_clf", "tiny_tr", "tiny_gen", "tiny_tag", "real_tr"} <= set(rows)
    params = TinyClassifier().count_params()
    size = sum(
        os.path.getsize(preset_root / "tiny_clf" / f)
        for f in os.listdir(preset_root / "tiny_clf")
    )
    assert rows["tiny_clf"].split() == [
        "tiny_clf",
        "TinyClassifier",
        "accuracy",
        "0.5",
        str(params),
        f"{size / 1000:.1f}",
        "kB",
    ]
    assert rows["tiny_tr"].split()[2] == "-"  # no metrics
    # No descriptions or nested metadata: one short row per preset (the shipped
    # presets of the checkout are listed too), and the columns line up.
    assert max(len(line) for line in lines) < 110
    assert len({line.index(line.split()[1]) for line in lines}) == 1


def test_presets_when_there_are_none(run, monkeypatch, tmp_path):
    monkeypatch.setattr(preset_catalog, "_PACKAGE_DIR", str(tmp_path / "pkg"))
    monkeypatch.setenv(presets.PRESETS_ENV, str(tmp_path / "empty"))
    code, out, _ = run("presets")
    assert code == 0
    assert out.startswith("No presets found (no preset folder exists).")


def test_presets_json_prints_every_metadata_entry(run, preset_root):
    code, out, _ = run("presets", "--json")
    assert code == 0
    printed = json.loads(out)
    assert printed == preset_catalog.preset_details()
    clf = printed["tiny_clf"]
    assert clf["path"] == str(preset_root / "tiny_clf")
    with open(preset_root / "tiny_clf" / "metadata.json", encoding="utf-8") as f:
        assert clf["metadata"] == json.load(f)


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
    _, out, _ = run(*argv, "--coverage-penalty", "0.3", "a")
    assert out == "a (beam 4, alpha 0.8, beta 0.3)\n"
    # A preset whose metadata records no α beams without one.
    _, out, _ = run("translate", "--preset", "tiny_tr", "--beam", "4", "a")
    assert out == "a (beam 4)\n"
    code, _, err = run(*argv, "--length-penalty", "-1", "a")
    assert code == 2 and "expected a float >= 0" in err


def test_python_and_the_cli_share_the_presets_search_defaults(run):
    # One default per preset: the Ding recipe's length penalty (1.2, recorded
    # in metadata.json) is the beam's in `translate` and in the CLI alike.
    preset = os.path.join(REPO, "saved_models", "ding_de_en_bahdanau")
    sentence = "Wenn du morgen Zeit hast, können wir zusammen in die Stadt fahren."
    model = Translator.from_preset(preset)
    assert model.search_settings.length_penalty == 1.2
    python = model.translate([sentence], beam_size=4)
    assert python == model.translate([sentence], beam_size=4, length_penalty=1.2)
    assert python != model.translate([sentence], beam_size=4, length_penalty=0.0)
    code, out, err = run("translate", "--preset", preset, "--beam", "4", sentence)
    assert code == 0, err
    assert out.splitlines() == python


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


def test_a_refused_line_gets_its_error_and_the_stream_goes_on(run):
    # The real Translator refuses a source longer than its max_source_length
    # (128 characters): that line alone gets an error and an empty output line,
    # in a batch with good lines, and the lines after it are translated.
    code, out, err = run(
        "translate",
        "--preset",
        "real_tr",
        "--batch-size",
        "2",
        stdin=f"ab\n{'a' * 200}\nabc\n\nba\n",
    )
    assert code == 1
    lines = out.split("\n")
    assert len(lines) == 6 and lines[1] == lines[3] == lines[5] == ""
    # Every other line answered, as it is without the refused one.
    code, good, _ = run("translate", "--preset", "real_tr", "ab", "abc", "ba")
    assert code == 0 and [lines[0], lines[2], lines[4]] == good.split("\n")[:3]
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("keras-rnnattn translate: error: line 2: ")
    assert "max_source_length" in err


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
    code, _, err = run(
        "translate", "--preset", "tiny_tr", "--attention", str(tmp_path / "x"), "a"
    )
    assert code == 0 and err.strip().endswith("x.png")  # the file written
    assert (tmp_path / "x.png").is_file()


def test_attention_plot_that_cannot_be_written_is_one_line(run, tmp_path):
    taken = tmp_path / "taken.png"
    os.makedirs(taken)  # a folder has the file's name
    code, out, err = run(
        "translate", "--preset", "tiny_tr", "--attention", str(taken), "a b"
    )
    assert_one_line_error(code, err, expected_code=1)
    assert out == "b a (beam 1)\n"  # the translation came first
    assert err.startswith("keras-rnnattn translate: error: ") and str(taken) in err


def test_attention_into_a_missing_folder_is_one_line(run, tmp_path):
    target = tmp_path / "plots" / "out.png"
    code, out, err = run(
        "translate", "--preset", "tiny_tr", "--attention", str(target), "a b"
    )
    assert_one_line_error(code, err)
    assert out == ""  # checked before translating
    assert f"there is no folder {tmp_path / 'plots'}" in err


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


def test_pronounce_prints_every_word_in_order_lowercased(run):
    code, out, err = run(
        "pronounce", "--preset", "tiny_tr", "Hello, world!", "WORLD it's 42"
    )
    assert code == 0, err
    assert out == (
        "hello hello (beam 1)\nworld world (beam 1)\n"
        "world world (beam 1)\nit's it's (beam 1)\n"
    )
    code, out, err = run(
        "pronounce", "--preset", "tiny_tr", "--beam", "3", stdin="Zoo\n\nzoo's\n"
    )
    assert out == "zoo zoo (beam 3)\nzoo's zoo's (beam 3)\n"


def test_pronounce_keeps_hyphenated_and_dotted_words_whole(run):
    code, out, err = run(
        "pronounce", "--preset", "tiny_tr", "U.S.A. e-mail Okonjo-Iweala"
    )
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == [
        "u.s.a",
        "e-mail",
        "okonjo-iweala",
    ]


@on_one_backend  # a fresh process, the same on every backend
def test_pronounce_streams_each_line_before_reading_the_next(preset_root):
    # A line in, its words out, while stdin stays open: a pipe that a TTS
    # front end keeps writing to. (real_tr reads the letters a to d.)
    env = dict(os.environ, **{presets.PRESETS_ENV: str(preset_root)})
    command = [sys.executable, "-m", "keras_rnnattn.cli", "pronounce"]
    process = subprocess.Popen(
        command + ["--preset", "real_tr"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        process.stdin.write("abc dab abc\n")
        process.stdin.flush()
        first = [process.stdout.readline() for _ in range(3)]
        assert [line.split()[0] for line in first] == ["abc", "dab", "abc"]
        process.stdin.write("bad\n")
        process.stdin.close()
        assert process.stdout.readline().split()[0] == "bad"
        assert process.wait(timeout=300) == 0
    finally:
        process.kill()


def test_punctuate_restores_each_line(run):
    code, out, err = run("punctuate", "--preset", "real_punct", "where is it", "it is")
    assert code == 0, err
    lines = out.splitlines()
    assert [strip_punctuation(line) for line in lines] == ["where is it", "it is"]
    code, _, err = run("punctuate", "--preset", "tiny_tr", "x")
    assert_one_line_error(code, err)
    assert "no restore_punctuation()" in err


def test_diacritics_reads_lines_from_stdin(run):
    code, out, err = run(
        "diacritics", "--preset", "real_marks", stdin="Zitra rano\n\nDo Brna!\n"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert [strip_diacritics(line) for line in lines] == ["Zitra rano", "", "Do Brna!"]
    code, _, err = run("diacritics", "--preset", "real_punct", "x")
    assert_one_line_error(code, err)
    assert "diacritic tags" in err


def test_pronounce_without_words_is_one_line(run):
    code, _, err = run("pronounce", "--preset", "tiny_tr", "-- !")
    assert_one_line_error(code, err)
    assert "no word given" in err


def test_pronounce_folds_accents_and_names_what_it_cannot_read(run):
    # real_tr reads the letters a, b, c and d, case kept (its tokenizer does
    # not lowercase, so words print as written): "àb" and "ÀḂ" are read as
    # "ab"; an emoji, a number and a word of other letters are named once each.
    code, out, err = run("pronounce", "--preset", "real_tr", "àb ÀḂ! 😀 42 ab😀 xyz")
    assert code == 0, err
    lines = [line.partition(" ") for line in out.splitlines()]
    assert [word for word, _, _ in lines] == ["àb", "ÀḂ", "ab"]
    assert len({output for _, _, output in lines}) == 1  # all three read as "ab"
    warned = [line.split("'")[1] for line in err.splitlines()]
    assert warned == ["😀", "42", "xyz"], err
    assert all("not pronounced" in line for line in err.splitlines())
    code, out, err = run("pronounce", "--preset", "real_tr", "😀")
    assert code == 1 and out == "" and "'😀' not pronounced" in err


def test_generate_passes_the_sampling_options(run):
    code, out, err = run(
        "generate",
        "--preset",
        "tiny_gen",
        "--max-length",
        "9",
        "--max-new-tokens",
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
    assert out == (
        "once upon | max_length=9 max_new_tokens=5 temperature=0.5 top_k=3 "
        "top_p=0.9 seed=7\n"
    )
    # Options not given are not passed: the model's defaults apply.
    code, out, _ = run("generate", "--preset", "tiny_gen", stdin="a\nb\n")
    assert out.splitlines() == [
        f"{p} | max_length=None max_new_tokens=None temperature=1.0 top_k=None "
        "top_p=None seed=None"
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
            ["export", "--preset", "tiny_tr", "--format", "openvino", "out"],
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
    code, out, err = run("generate", "--preset", "tiny_gen", "x")
    assert_one_line_error(code, err, expected_code=1)
    assert err.startswith(
        "keras-rnnattn generate: error: line 1: the prompt has 900 tokens"
    )
    assert out == "\n"
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
    monkeypatch.setattr(_cli_commands, "applications_dir", lambda: str(root))
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
    monkeypatch.setattr(
        _cli_commands, "applications_dir", lambda: str(tmp_path / "none")
    )
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
    # The beam's settings are passed only when given, as the preset's search
    # settings with them changed (without them export_preset takes the
    # preset's own: tests/test_export.py checks that).
    code, _, err = run(
        "export", "--preset", "tiny_tr_alpha", "--format", "tflite",
        "--coverage-penalty", "0.2", out,
    )  # fmt: skip
    assert code == 0, err
    assert calls[-1][-1] == {
        "search": SearchSettings(
            "beam", beam_size=4, length_penalty=0.8, coverage_penalty=0.2
        )
    }
    code, _, err = run(
        "export", "--preset", "tiny_tr_alpha", "--format", "tflite",
        "--length-penalty", "0.5", "--beam-size", "6", out,
    )  # fmt: skip
    assert calls[-1][-1]["search"] == SearchSettings(
        "beam", beam_size=6, length_penalty=0.5
    )
    assert stdout == out + ".tflite\n"
    code, _, err = run("export", "--preset", "nope", "--format", "tflite", out)
    assert_one_line_error(code, err)
    assert "Unknown preset 'nope'" in err


@pytest.mark.parametrize(
    "format", ["tf_saved_model", "litert", "onnx", "saved_model", "tflite"]
)
def test_export_takes_every_format_name(run, monkeypatch, tmp_path, format):
    calls = []
    module = types.ModuleType("keras_rnnattn.export")
    module.export_preset = lambda preset, out, format, quantize: calls.append(format)
    monkeypatch.setitem(sys.modules, "keras_rnnattn.export", module)
    code, _, err = run(
        "export", "--preset", "tiny_clf", "--format", format, str(tmp_path)
    )
    assert code == 0, err
    assert calls == [format]


def test_export_onnx_without_its_packages_names_the_extra(run, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # not installed
    code, _, err = run(
        "export", "--preset", "real_tr", "--format", "onnx", str(tmp_path / "o")
    )
    assert_one_line_error(code, err, expected_code=1)
    assert 'pip install ".[onnx]"' in err
    assert not os.path.exists(tmp_path / "o")


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
    assert (
        "Unknown preset 'x'. Available presets: real_marks (SequenceTagger), "
        "real_punct (SequenceTagger), real_tr (Translator), tiny_clf" in failed.stderr
    )
    assert "Traceback" not in failed.stderr


# Commands that need no model, run in a fresh process: each error is one line on
# stderr, and neither Keras nor a backend is imported.
NO_MODEL = """
import contextlib, io, json, sys
from keras_rnnattn import cli
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    results.append([code, out.getvalue(), err.getvalue()])
imported = [m for m in ("keras", "tensorflow", "jax", "torch") if m in sys.modules]
print(json.dumps({"results": results, "imported": imported}))
"""


def test_commands_without_a_model_import_no_backend(preset_root, tmp_path):
    missing = str(tmp_path / "plots" / "out.png")
    cases = [
        (["presets"], 0, "tiny_clf"),
        (["presets", "--json"], 0, '"tiny_clf"'),
        (["--help"], 0, "usage:"),
        (["translate", "--preset", "nope", "a"], 2, "Unknown preset 'nope'"),
        (["tag", "--preset", "./no/such/folder", "a"], 2, "No preset folder at"),
        (["export", "--preset", "nope", "--format", "tflite", "o"], 2, "Unknown"),
        (["translate", "--preset", "tiny_tr", "--attention", missing, "a"], 2, "no folder"),
        (["translate", "--preset", "tiny_tr", "--beam", "0", "a"], 2, "int >= 1"),
        (["translate", "a"], 2, "--preset"),
        (["frobnicate"], 2, "invalid choice"),
        ([], 2, "choose a command"),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=REPO, **{presets.PRESETS_ENV: str(preset_root)})
    done = subprocess.run(
        [sys.executable, "-c", NO_MODEL, json.dumps([argv for argv, _, _ in cases])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["imported"] == []
    for (argv, expected_code, expected), (code, out, err) in zip(
        cases, report["results"]
    ):
        assert code == expected_code, (argv, err)
        if code == 0:
            assert expected in out and err == "", argv
        else:
            assert len(err.splitlines()) == 1, (argv, err)
            assert err.startswith("keras-rnnattn") and expected in err, (argv, err)
            assert out == "", argv


def test_errors_after_loading_a_model_are_one_line_without_backend_logs(preset_root):
    # The backend is imported (TensorFlow logs through absl while it loads,
    # whatever TF_CPP_MIN_LOG_LEVEL says) and the model loaded before the error.
    env = dict(os.environ, PYTHONPATH=REPO, **{presets.PRESETS_ENV: str(preset_root)})
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    done = subprocess.run(
        [sys.executable, "-m", "keras_rnnattn.cli", "classify", "--preset", "real_tr"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "keras-rnnattn classify: error: preset 'real_tr' holds a model of class "
        "Translator, which has no classify(): use `keras-rnnattn translate or "
        "generate`"
    ]
    assert done.stdout == ""


def test_generate_on_a_translator_translates_and_names_refused_options(run):
    code, out, err = run(
        "generate", "--preset", "real_tr", "--max-new-tokens", "4", "ab"
    )
    assert code == 0, err
    assert len(out.splitlines()) == 1
    code, _, err = run("generate", "--preset", "real_tr", "--temperature", "0.5", "ab")
    assert code == 2
    assert "Translator.generate takes no --temperature: leave it out" in err
