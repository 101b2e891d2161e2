"""The package imports lazily: text without Keras, every class registered with it."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(code):
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_text_imports_without_keras():
    done = run(
        "import sys\n"
        "from keras_rnnattn.text import BpeTokenizer\n"
        "tok = BpeTokenizer(max_vocab=40).fit(['ein kleiner Test', 'kein Test'])\n"
        "print(tok.decode(tok.encode('ein Test')))\n"
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') "
        "if m in sys.modules))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["ein Test", "[]"]


def test_importing_after_keras_registers_every_class():
    done = run(
        "import keras, keras_rnnattn\n"
        "names = ['Translator', 'AttentionClassifier', 'BahdanauAttention',\n"
        "         'AttentionDecoder', 'SequenceSelfAttention']\n"
        "print(all(keras.saving.get_registered_object('keras_rnnattn>' + n)\n"
        "          for n in names))\n"
        "print(keras_rnnattn.models.Translator.__name__, keras_rnnattn.PresetError)\n"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True"
    assert lines[1].startswith("Translator <class 'keras_rnnattn.preset_error")


def _application_models():
    from keras_rnnattn.models import (
        AttentionClassifier,
        AttentiveLanguageModel,
        SequenceTagger,
        Translator,
        TranslatorEnsemble,
    )
    from keras_rnnattn.text import CharTokenizer

    chars = CharTokenizer().fit(["abc"])
    small = dict(embedding_dim=4, units=4)
    translators = [Translator(chars, chars, **small) for _ in range(2)]
    for translator in translators:
        translator.translate("ab", max_length=2)  # builds it
    return {
        "AttentionClassifier": AttentionClassifier(
            tokenizer=chars, labels=["x", "y"], **small
        ),
        "SequenceTagger": SequenceTagger(tokenizer=chars, tags=["O", "B"], **small),
        "AttentiveLanguageModel": AttentiveLanguageModel(tokenizer=chars, **small),
        "Translator": translators[0],
        "TranslatorEnsemble": TranslatorEnsemble(translators),
    }


def test_models_load_when_the_package_is_imported_before_keras(tmp_path):
    names = []
    for name, model in _application_models().items():
        model.save(os.path.join(tmp_path, f"{name}.keras"))
        names.append(name)
    done = run(
        "import keras_rnnattn as kra\n"
        "import keras\n"
        "import os, sys\n"
        f"for name in {names!r}:\n"
        f"    path = os.path.join({str(tmp_path)!r}, name + '.keras')\n"
        "    print(type(keras.saving.load_model(path)).__name__)\n"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == names


def test_any_module_may_be_imported_first():
    # Keras imported by one of the package's own modules (a layer file, ops) or
    # by the user afterwards: the classes are registered once no module of the
    # package is half imported (registering from inside one used to import it
    # again, half made: "cannot import name ... partially initialized module").
    firsts = [
        "keras_rnnattn.layers",
        "keras_rnnattn.layers.luong_attention",
        "keras_rnnattn.ops",
        "keras_rnnattn.preset_mixin",
        "keras_rnnattn.decoding",
        "keras_rnnattn.models.translator",
        "keras_rnnattn.text",
    ]
    code = (
        "import importlib, sys\n"
        "first = sys.argv[1]\n"
        "importlib.import_module(first)\n"
        "import keras\n"
        "names = ['Translator', 'AttentionClassifier', 'LuongAttention']\n"
        "print(first, all(keras.saving.get_registered_object('keras_rnnattn>' + n)\n"
        "                 for n in names))\n"
    )
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    for first in firsts:
        done = subprocess.run(
            [sys.executable, "-c", code, first],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{first}: {done.stderr[-2000:]}"
        assert done.stdout.split() == [first, "True"]
