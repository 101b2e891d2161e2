"""The package imports lazily: text without Keras, every class registered with it."""

import ast
import os
import subprocess
import sys
from importlib.util import find_spec

from tests.backends import on_one_backend

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


@on_one_backend
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


@on_one_backend
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
    assert lines[1].startswith("Translator <class 'keras_rnnattn.presets.error")


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


@on_one_backend
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


@on_one_backend
def test_any_module_may_be_imported_first():
    # Keras imported by one of the package's own modules (a layer file, ops) or
    # by the user afterwards: the classes are registered once no module of the
    # package is half imported (registering from inside one used to import it
    # again, half made: "cannot import name ... partially initialized module").
    firsts = [
        "keras_rnnattn.layers",
        "keras_rnnattn.layers.luong_attention",
        "keras_rnnattn.ops",
        "keras_rnnattn.presets.mixin",
        "keras_rnnattn.presets.saving",  # load_preset finds the models this way
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
    # Registration does not depend on the backend: the processes run JAX's
    # where it is installed, which Keras imports in half the time of torch's
    # (4 against 8 s a process here, 8 processes).
    env = {
        **os.environ,
        "PYTHONPATH": REPO,
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    if find_spec("jax"):
        env["KERAS_BACKEND"] = "jax"
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


# --- Import graph -------------------------------------------------------------
PACKAGE = "keras_rnnattn"


def _package_modules(root):
    """`{dotted module name: file}` of every module under `root/keras_rnnattn`."""
    modules = {}
    for folder, dirs, files in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                parts = os.path.relpath(path, root)[: -len(".py")].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                modules[".".join(parts)] = path
    return modules


def _imported_names(name, path):
    """`(dotted name, line)` of every import in a module, functions included.

    `from a.b import c` names `a.b` and `a.b.c` (c may be a module);
    `importlib.import_module("a.b")` with a literal names `a.b`.
    """
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield module, node.lineno
            for alias in node.names:
                yield f"{module}.{alias.name}", node.lineno
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield node.args[0].value, node.lineno


def import_graph(root):
    """`{module: {imported module of the package: line}}` for the package at `root`."""
    modules = _package_modules(root)
    graph = {}
    for name, path in modules.items():
        edges = {}
        for imported, line in _imported_names(name, path):
            if imported in modules and imported != name:
                edges.setdefault(imported, line)
        graph[name] = edges
    return graph, modules


def import_cycles(root):
    """Each import circle of the package, as `a (file:line) -> b ... -> a` text."""
    graph, modules = import_graph(root)
    cycles, done = [], set()

    def visit(name, path):
        for imported in sorted(graph[name]):
            if imported in path:
                circle = path[path.index(imported) :] + [imported]
                steps = [
                    f"{a} ({os.path.relpath(modules[a], root)}:{graph[a][b]})"
                    for a, b in zip(circle, circle[1:])
                ]
                cycles.append(" -> ".join(steps + [imported]))
            elif imported not in done:
                visit(imported, path + [imported])
        done.add(name)

    for name in sorted(graph):
        if name not in done:
            visit(name, [name])
    return cycles


def test_the_import_checker_finds_a_circle_through_a_deferred_import(tmp_path):
    # A circle held by an import inside a function, through a package __init__.
    files = {
        "__init__.py": "",
        "a/__init__.py": "from keras_rnnattn.a.one import One\n",
        "a/one.py": "from keras_rnnattn.b import two\nOne = 1\n",
        "b/__init__.py": "",
        "b/two.py": "def late():\n    from keras_rnnattn import a\n",
        "c.py": "import keras_rnnattn.b.two\n",
    }
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    cycles = import_cycles(str(tmp_path))
    assert len(cycles) == 1, cycles
    assert cycles[0].startswith("keras_rnnattn.a (keras_rnnattn/a/__init__.py:1) ")
    assert (
        "keras_rnnattn.b.two (keras_rnnattn/b/two.py:2) -> keras_rnnattn.a"
        in (cycles[0])
    )


def test_the_package_has_no_import_circle():
    # Module level or deferred into a function: a module never needs, through
    # any chain of imports, a module that needs it. The package's __init__ is
    # the top of the graph (it registers the layers and models), so no module
    # imports from it: `__version__` comes from `_version`.
    cycles = import_cycles(REPO)
    assert not cycles, "Import circles:\n" + "\n".join(cycles)


# --- Backend branches ---------------------------------------------------------
# The files outside `_backend/` that may call `backend()`, and why; each such
# line says why in a comment on it or just above it.
BACKEND_CALLS_ALLOWED = {
    "keras_rnnattn/presets/saving.py": "records the backend in metadata.json",
    "keras_rnnattn/export/exporter.py": "exports from a TensorFlow subprocess on the other "
    "backends",
    "keras_rnnattn/export/writers.py": "records the backend in the manifest",
    "keras_rnnattn/demo.py": "prints the backend",
    "keras_rnnattn/training/history.py": "records the backend of each training call",
    "keras_rnnattn/decoding/sampling.py": "a seeded draw on TensorFlow names its "
    "algorithm (draw_uniforms)",
}


def _backend_calls(path):
    """Lines of `backend()` calls (`keras.backend.backend()`, `keras.config.backend()`)."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and not node.args
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == "backend"
    ]


def test_backend_branches_live_in_the_backend_package():
    found = {}
    for path in _package_modules(REPO).values():
        relative = os.path.relpath(path, REPO).replace(os.sep, "/")
        if relative.startswith("keras_rnnattn/_backend/"):
            continue
        lines = _backend_calls(path)
        if lines:
            found[relative] = (path, lines)
    unexpected = sorted(set(found) - set(BACKEND_CALLS_ALLOWED))
    assert not unexpected, (
        f"{unexpected} call keras.backend.backend(): move the branch into "
        "keras_rnnattn/_backend/, or say why it stays in a comment and add the "
        "file to BACKEND_CALLS_ALLOWED"
    )
    stale = sorted(set(BACKEND_CALLS_ALLOWED) - set(found))
    assert not stale, f"{stale} no longer call backend(): drop them from the list"
    for relative, (path, lines) in found.items():
        with open(path, encoding="utf-8") as file:
            source = file.read().splitlines()
        for line in lines:
            nearby = source[max(0, line - 4) : line]
            assert any("#" in text for text in nearby), (
                f"{relative}:{line} calls backend() without a comment saying why"
            )


# --- Decoding depends on Keras and the backend package only --------------------
def test_decoding_imports_no_layer_or_model_code():
    # The search functions know nothing of the models: the package modules they
    # reach, through any chain of imports, are decoding's own, `_backend`'s and
    # the argument checks (`_checks`, which imports nothing of the package).
    graph, _ = import_graph(REPO)
    allowed = (f"{PACKAGE}.decoding", f"{PACKAGE}._backend", f"{PACKAGE}._checks")
    start = [name for name in graph if name.startswith(f"{PACKAGE}.decoding")]
    assert f"{PACKAGE}.decoding.beam_search" in start
    reached, todo = {}, [(name, name) for name in start]
    while todo:
        name, via = todo.pop()
        for imported, line in graph[name].items():
            if imported not in reached:
                reached[imported] = f"{via} -> {name}:{line}"
                todo.append((imported, via))
    outside = {
        name: how
        for name, how in reached.items()
        if not any(name == a or name.startswith(a + ".") for a in allowed)
    }
    assert not outside, (
        "keras_rnnattn/decoding/ reaches package code outside decoding/ and "
        f"_backend/: {outside}; move the helper into keras_rnnattn/_backend/"
    )


# --- Module size ----------------------------------------------------------------
MAX_MODULE_LINES = 500


def _line_count(path):
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in file)


def test_no_module_passes_the_size_limit():
    sizes = {
        os.path.relpath(path, REPO).replace(os.sep, "/"): _line_count(path)
        for path in _package_modules(REPO).values()
    }
    assert len(sizes) > 100  # the modules were found
    too_long = {
        path: lines for path, lines in sorted(sizes.items()) if lines > MAX_MODULE_LINES
    }
    assert not too_long, (
        f"{too_long} pass {MAX_MODULE_LINES} lines: split them (one public class "
        "per file, private helpers in modules beside it)"
    )


def test_the_size_check_counts_lines(tmp_path):
    path = tmp_path / "long.py"
    path.write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert _line_count(str(path)) == MAX_MODULE_LINES + 1


# --- Attention names ------------------------------------------------------------
# Where a list of attention names may be written: the registry, and the
# `score` values of `LuongAttention`, from which the registry derives its
# `luong_*` names.
ATTENTION_LISTS_ALLOWED = {
    "keras_rnnattn/layers/score_layers.py": "the registry",
    "keras_rnnattn/layers/luong_attention.py": "LuongAttention's own `score` values",
}


def _is_attention_name(text):
    return text in ("bahdanau", "dot", "general", "location") or text.startswith(
        ("luong_", "scaled_", "bahdanau_")
    )


def _attention_lists(path):
    """Lines of tuple, list or set literals naming two attentions or more."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and sum(
            isinstance(item, ast.Constant)
            and isinstance(item.value, str)
            and _is_attention_name(item.value)
            for item in node.elts
        )
        >= 2
    ]


def test_attention_names_are_listed_in_the_registry_only():
    paths = list(_package_modules(REPO).values())
    applications = os.path.join(REPO, "applications")
    for folder, _dirs, files in os.walk(applications):
        paths += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    found = {}
    for path in paths:
        relative = os.path.relpath(path, REPO).replace(os.sep, "/")
        lines = _attention_lists(path)
        if lines and relative not in ATTENTION_LISTS_ALLOWED:
            found[relative] = lines
    assert not found, (
        f"lists of attention names outside the registry: {found}; import them "
        "from keras_rnnattn/layers/score_layers.py"
    )


def test_the_attention_list_check_finds_a_list(tmp_path):
    path = tmp_path / "recipe.py"
    path.write_text('CHOICES = ["bahdanau", "luong_general", "none"]\n')
    assert _attention_lists(str(path)) == [1]
