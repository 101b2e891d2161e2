"""The Python code of the Markdown pages, run as tests on the current backend.

Every ```python block of README.md, applications/*/README.md (the model
cards), saved_models/README.md and docs/**/*.md (the documentation site's
pages: the site shows the cards and saved_models/README.md too) is one test,
named after its file and the line of its opening fence (`README.md:304`).
The blocks run as a reader runs them: in file order, in one namespace per file (a block may use what an earlier
block of the same file defined), each file in its own empty working folder
(files a block writes, such as `classifier.keras`, land there). All files share
one Python process, started once per test session and separate from pytest's,
so a block's imports and global settings (`keras.distribution`) start from
nothing, as in a user's script. A failure shows the traceback with the README's
own line numbers and what the block printed.

A block's test is driven by HTML comments on the lines right before its
fence (blank lines between are allowed); GitHub does not show them:

    <!-- test: skip (needs network: tfds) -->
        never run; the test is skipped with the text in parentheses.
    <!-- test: slow (four exports, about a minute) -->
        run only with `-m slow` (marked `slow`).
    <!-- test: backends jax tensorflow -->
        run only on these backends; skipped on the others. A block without
        this directive runs on every backend: in the default run of the torch
        suite (`tests/backends.py`'s ONE_BACKEND, the shortest of the three
        that `make test` runs side by side), and with `-m slow` in the others.
        An example's Python is the same on every backend; what each backend
        does with it is what the unit tests check, on all three.
    <!-- test: setup
    src_tok = kra.text.WordTokenizer().fit(["ein Haus"])
    -->
        Python run just before the block, in the file's namespace: defines what
        the block takes from the reader's own code (their data, their tokenizer).
    <!-- test: teardown
    keras.distribution.set_distribution(None)
    -->
        Python run just after the block, even when it failed: undoes global
        settings that later blocks must not inherit.

Any other `<!-- test: ... -->` comment fails `test_directives`.

A reader copies a block from the rendered page, where the comments are hidden,
so `test_blocks_stand_alone_or_say_what_they_continue` reads each block's
names: a name it uses and does not define must come from a block it continues
(the paragraph above it says so: "Continuing the classifier block above") or
be named, in backticks, in that paragraph as the reader's own ("your
`encoder`"); a `setup` may write files a block reads, never define a name it
uses. Blocks skipped
or not selected (`-m`, `-k`) do not run, nor do the blocks after the last
selected one of a file; a selected block's predecessors in its file run first
(those not skipped, and slow ones only under `-m slow`), since it may need them.
`-rA` shows each block's time and output.
"""

import builtins
import dataclasses
import glob
import json
import os
import re
import subprocess
import symtable
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 1200

DIRECTIVE = re.compile(r"<!--\s*test:(.*?)-->", re.DOTALL)
KINDS = ("skip", "slow", "backends", "setup", "teardown")
BACKENDS = ("tensorflow", "jax", "torch")


@dataclasses.dataclass
class Block:
    """One ```python block and the directives before its fence."""

    path: str  # relative to the repository, "README.md"
    line: int  # 1-based line of the opening fence
    code: str
    skip: str = None  # the reason
    slow: str = None  # the reason ("" when none is given)
    backends: tuple = None  # None: every backend (see the module docstring)
    setup: str = ""
    setup_line: int = 0  # 1-based line of the setup code's first line
    teardown: str = ""
    teardown_line: int = 0
    intro: str = ""  # the paragraph of text right above the block (and its directives)
    errors: list = dataclasses.field(default_factory=list)

    @property
    def name(self):
        return f"{self.path}:{self.line}"


def markdown_files():
    """The Markdown files whose Python blocks are tested, README.md first."""
    paths = ["README.md"]
    for pattern in (
        "applications/*/README.md",
        "saved_models/README.md",
        "docs/**/*.md",
    ):
        found = glob.glob(os.path.join(REPO, pattern), recursive=True)
        paths += sorted(os.path.relpath(p, REPO) for p in found)
    return paths


def _reason(text):
    match = re.fullmatch(r"\((.*)\)", text.strip(), re.DOTALL)
    return match.group(1).strip() if match else text.strip()


def _apply(block, comment, first_line):
    """Applies the text of one `<!-- test: ... -->` comment to `block`."""
    kind, _, rest = comment.strip().partition("\n")
    words = kind.split(None, 1)
    name = words[0] if words else ""
    arguments = words[1] if len(words) > 1 else ""
    if name in ("setup", "teardown"):
        if arguments:
            block.errors.append(f"`{name}` takes its code on the following lines")
        setattr(block, name, rest)
        setattr(block, f"{name}_line", first_line + 1)
    elif name == "skip":
        block.skip = _reason(arguments) or "marked skip"
    elif name == "slow":
        block.slow = _reason(arguments)
    elif name == "backends":
        names = tuple(re.split(r"[\s,]+", arguments.split("(")[0].strip()))
        unknown = [n for n in names if n not in BACKENDS]
        if unknown or not names:
            block.errors.append(
                f"`backends` takes names of {BACKENDS}. Received: {arguments!r}"
            )
        block.backends = names
    else:
        block.errors.append(
            f"unknown directive {name!r} (known: {', '.join(KINDS)}) on line "
            f"{first_line}"
        )


def parse_blocks(path, text=None):
    """The ```python blocks of one Markdown file (or of `text`) with directives."""
    if text is None:
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            text = file.read()
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() not in ("```python", "```py"):
            i += 1
            continue
        start = i
        end = start + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        block = Block(path, start + 1, "\n".join(lines[start + 1 : end]))
        # Directives: comments (and blank lines) right above the fence.
        j = start - 1
        comments = []
        while j >= 0:
            if not lines[j].strip():
                j -= 1
                continue
            if not lines[j].rstrip().endswith("-->"):
                break
            k = j
            while k >= 0 and "<!--" not in lines[k]:
                k -= 1
            if k < 0:
                break
            comments.append((k, "\n".join(lines[k : j + 1])))
            j = k - 1
        # The paragraph a reader sees above the block.
        k = j
        while k >= 0 and lines[k].strip() and not lines[k].startswith("```"):
            k -= 1
        block.intro = " ".join(line.strip() for line in lines[k + 1 : j + 1])
        for k, text in reversed(comments):
            match = DIRECTIVE.search(text)
            if match:
                # The text of the first line after "test:" starts at comment line k.
                _apply(block, match.group(1), k + 1)
        blocks.append(block)
        i = end + 1
    return blocks


ALL_BLOCKS = [block for path in markdown_files() for block in parse_blocks(path)]


def _backend():
    import keras

    return keras.backend.backend()


def _slow(block):
    """Marked slow, or a block for every backend in a suite other than ONE_BACKEND's."""
    from tests.backends import ONE_BACKEND

    every = block.backends is None and _backend() != ONE_BACKEND
    return block.slow is not None or every


def _params():
    backend = _backend()
    params = []
    for block in ALL_BLOCKS:
        marks = []
        if block.skip is not None:
            marks.append(pytest.mark.skip(reason=block.skip))
        elif backend not in (block.backends or BACKENDS):
            marks.append(
                pytest.mark.skip(reason=f"runs on {' and '.join(block.backends)} only")
            )
        if _slow(block):
            marks.append(pytest.mark.slow)
        params.append(pytest.param(block, marks=marks, id=block.name))
    return params


def _runs(block):
    return block.skip is None and _backend() in (block.backends or BACKENDS)


def _selected_blocks(session):
    """The blocks whose tests this session runs (after `-m` and `-k`)."""
    names = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and isinstance(callspec.params.get("block"), Block):
            names.add(callspec.params["block"].name)
    return names


_RESULTS = {}


def _run_plan(plan, folder, timeout):
    """Runs `plan` (block dicts) in a fresh Python; `(results, output tail)`."""
    spec = os.path.join(folder, "spec.json")
    out = os.path.join(folder, "results.json")
    with open(spec, "w", encoding="utf-8") as file:
        json.dump({"blocks": plan, "out": out, "repo": REPO}, file)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), spec],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        tail = (done.stdout + done.stderr)[-3000:]
    except subprocess.TimeoutExpired:
        tail = f"the README blocks ran past {timeout} s"
    results = {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as file:
            results = json.load(file)
    for b in plan:
        results.setdefault(
            f"{b['path']}:{b['line']}",
            {"ok": False, "error": "did not run: the process ended:\n" + tail},
        )
    return results, tail


def _results(session):
    """Runs the blocks once per session; `{block name: result}`."""
    if _RESULTS:
        return _RESULTS
    selected = _selected_blocks(session)
    plan = []
    for path in markdown_files():
        blocks = [b for b in ALL_BLOCKS if b.path == path]
        wanted = [b.line for b in blocks if b.name in selected and _runs(b)]
        if not wanted:
            continue
        last = max(wanted)
        for b in blocks:
            if b.line > last or not _runs(b) or b.errors:
                continue
            if _slow(b) and b.name not in selected:
                continue
            plan.append(dataclasses.asdict(b))
    with tempfile.TemporaryDirectory() as folder:
        results, _ = _run_plan(plan, folder, TIMEOUT_S)
    _RESULTS.update(results)
    return _RESULTS


def test_directives():
    errors = [f"{b.name}: {e}" for b in ALL_BLOCKS for e in b.errors]
    assert not errors, "\n".join(errors)


def free_names(code):
    """The names `code` uses without defining them (builtins left out)."""
    table = symtable.symtable(code, "<block>", "exec")
    defined = {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }
    used = set()

    def visit(table, top):
        for s in table.get_symbols():
            if s.is_referenced() and (top or s.is_global()):
                used.add(s.get_name())
        for child in table.get_children():
            visit(child, False)

    visit(table, True)
    return used - defined - set(dir(builtins))


CONTINUES = re.compile(r"\bcontinu(es|ing)\b", re.IGNORECASE)


def reader_errors(block):
    """Why `block` does not run as a reader copies it from the rendered page.

    A block stands alone, or the paragraph above it says which block it
    continues ("Continuing the classifier above, ...") or names, in
    backticks, what it takes from the reader's own code ("your `encoder`");
    and nothing it uses comes from a `setup` directive, which the rendered
    page does not show.
    """
    try:
        names = free_names(block.code)
    except SyntaxError as error:
        return [f"{block.name}: not Python: {error}"]
    errors = []
    hidden = sorted(names & free_names_defined(block.setup))
    if hidden:
        errors.append(
            f"{block.name} uses {', '.join(hidden)}, defined only in its hidden "
            "`setup`: define them in the block or in a block it continues"
        )
    elif names and not CONTINUES.search(block.intro):
        # Or the text above names (in backticks) what the reader brings.
        named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", block.intro))
        if names - named:
            errors.append(
                f"{block.name} uses {', '.join(sorted(names - named))} without "
                "defining them: define them in the block, say in the text above it "
                'which block it continues ("Continuing the ... block above"), or '
                "name there, in backticks, what it takes from the reader's code"
            )
    return errors


def free_names_defined(code):
    """The names a piece of code defines at its top level."""
    if not code.strip():
        return set()
    table = symtable.symtable(code, "<setup>", "exec")
    return {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }


def test_blocks_stand_alone_or_say_what_they_continue():
    errors = [e for block in ALL_BLOCKS for e in reader_errors(block)]
    assert not errors, "\n".join(errors)


def test_reader_checks():
    (alone,) = parse_blocks("A.md", "Text.\n\n```python\nx = 1\nprint(len([x]))\n```\n")
    assert not reader_errors(alone)
    (bad,) = parse_blocks("B.md", "Text.\n\n```python\nprint(x)\n```\n")
    assert "uses x without defining them" in reader_errors(bad)[0]
    text = (
        "Continuing the block above:\n\n<!-- test: slow -->\n```python\nprint(x)\n```\n"
    )
    (said,) = parse_blocks("C.md", text)
    assert said.intro == "Continuing the block above:" and not reader_errors(said)
    text = "Text.\n\n<!-- test: setup\nx = 1\n-->\n```python\ndef f():\n    return x\n```\n"
    (hidden,) = parse_blocks("D.md", text)
    assert "defined only in its hidden `setup`" in reader_errors(hidden)[0]
    (named,) = parse_blocks("E.md", "With your `x`:\n\n```python\nprint(x)\n```\n")
    assert not reader_errors(named)


def test_blocks_found():
    assert any(b.path == "README.md" for b in ALL_BLOCKS)


SAMPLE = """# Title

<!-- test: slow (a reason) -->
<!-- test: backends jax tensorflow -->

<!-- test: setup
x = 2
-->
<!-- test: teardown
x = None
-->
```python
y = x + 1
```

Text.

<!-- test: skip (needs network: tfds) -->
```python
import tensorflow_datasets
```

```python
z = y * 10
raise RuntimeError(z)
```
"""


def test_directives_are_parsed():
    first, second, third = parse_blocks("SAMPLE.md", SAMPLE)
    assert (first.line, first.code) == (12, "y = x + 1")
    assert first.slow == "a reason" and first.skip is None
    assert first.backends == ("jax", "tensorflow")
    assert (first.setup, first.setup_line) == ("x = 2", 7)
    assert (first.teardown, first.teardown_line) == ("x = None", 10)
    assert second.skip == "needs network: tfds" and second.slow is None
    assert third.skip is None and third.backends is None and not third.setup
    assert not (first.errors or second.errors or third.errors)
    (bad,) = parse_blocks("BAD.md", "<!-- test: skipp -->\n```python\npass\n```\n")
    assert "unknown directive 'skipp'" in bad.errors[0]


def test_runner_shares_a_namespace_and_names_the_failing_line(tmp_path):
    from tests.backends import only_on_one_backend  # the runner imports this file

    only_on_one_backend()
    path = os.path.relpath(tmp_path / "SAMPLE.md", REPO)
    (tmp_path / "SAMPLE.md").write_text(SAMPLE, encoding="utf-8")
    plan = [dataclasses.asdict(b) for b in parse_blocks(path, SAMPLE) if b.skip is None]
    results, tail = _run_plan(plan, str(tmp_path), timeout=60)
    assert results[f"{path}:12"]["ok"], results
    failed = results[f"{path}:23"]
    assert not failed["ok"]
    # The setup ran before the first block and the teardown after it; the
    # third block saw y = 3; the traceback names the Markdown line.
    assert "RuntimeError: 30" in failed["error"]
    assert 'SAMPLE.md", line 25' in failed["error"]
    assert "raise RuntimeError(z)" in failed["error"]


@pytest.mark.parametrize("block", _params())
def test_block(block, request):
    if block.errors:
        pytest.fail(f"{block.name}: " + "; ".join(block.errors), pytrace=False)
    result = _results(request.session)[block.name]
    # Shown by `-rA`: how long each block takes.
    print(
        f"{block.name} ran in {result.get('seconds', '?')} s "
        f"({result.get('cpu_seconds', '?')} s CPU)"
    )
    print(result.get("stdout", ""))
    if not result["ok"]:
        printed = result.get("stdout", "")[-2000:]
        pytest.fail(
            f"{block.name} failed:\n{result['error']}"
            + (f"\nIt printed:\n{printed}" if printed else ""),
            pytrace=False,
        )


# --- The runner: `python tests/test_readme.py spec.json` ------------------------
def _run(spec_path):
    import contextlib
    import io
    import time
    import traceback

    with open(spec_path, encoding="utf-8") as file:
        spec = json.load(file)
    results = {}
    namespaces = {}
    folders = {}

    def run_code(code, first_line, filename, namespace):
        # Padded so that tracebacks show the Markdown file's own line numbers.
        compiled = compile("\n" * (first_line - 1) + code, filename, "exec")
        exec(compiled, namespace)

    for block in spec["blocks"]:
        path = block["path"]
        filename = os.path.join(spec["repo"], path)
        if path not in namespaces:
            namespaces[path] = {"__name__": "__main__"}
            folders[path] = tempfile.mkdtemp(
                prefix="readme_", dir=os.path.dirname(os.path.abspath(spec_path))
            )
        os.chdir(folders[path])
        namespace = namespaces[path]
        stdout = io.StringIO()
        start, cpu = time.perf_counter(), time.process_time()
        error = None
        with contextlib.redirect_stdout(stdout):
            try:
                if block["setup"]:
                    run_code(block["setup"], block["setup_line"], filename, namespace)
                run_code(block["code"], block["line"] + 1, filename, namespace)
            except BaseException:
                error = traceback.format_exc()
            finally:
                if block["teardown"]:
                    try:
                        run_code(
                            block["teardown"],
                            block["teardown_line"],
                            filename,
                            namespace,
                        )
                    except BaseException:
                        error = (error or "") + traceback.format_exc()
        results[f"{path}:{block['line']}"] = {
            "ok": error is None,
            "error": error,
            "stdout": stdout.getvalue(),
            "seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
        }
        # Written after every block: a crash keeps the results so far.
        with open(spec["out"], "w", encoding="utf-8") as file:
            json.dump(results, file)


if __name__ == "__main__":
    _run(sys.argv[1])
