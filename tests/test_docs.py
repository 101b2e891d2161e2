"""The documentation site (mkdocs.yml): it builds, it covers the API, it works in a browser.

The site is built once per session, as `make docs` builds it, in strict mode:
a broken link or anchor, a page missing from the nav, a docstring the parser
cannot read or a reference to a missing name fails the build. Then every
public name (the `__all__` lists of the package and its subpackages) must have
an entry in the built site's inventory (`objects.inv`, what mkdocstrings
rendered), and headless Chromium must show the home page, a guide and an API
page with their titles and without console errors, and find `AttentionDecoder`
with the site's search. The screenshots go to `$DOCS_SCREENSHOTS` when it is
set. The hooks that add the model cards and benchmark pages and read Keras's
docstring sections are checked on their own, and the README's links must
point at files and headings that exist. The Python blocks of the pages run in
tests/test_readme.py.
"""

import functools
import http.server
import importlib
import importlib.util
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import threading
import zlib

import pytest

from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The same on every backend, and no Keras in the build: the torch suite only.
pytestmark = on_one_backend


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder; fails with the build's warnings if it does not build."""
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as error:
        pytest.fail(
            f"the documentation tools are missing ({error}): "
            'pip install -e ".[docs]" (make test installs them)'
        )
    folder = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", folder],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        problems = [
            line
            for line in (done.stdout + done.stderr).splitlines()
            if "WARNING" in line or "ERROR" in line or "Error" in line
        ]
        pytest.fail(
            "mkdocs build --strict failed:\n"
            + "\n".join(problems or [(done.stdout + done.stderr)[-3000:]]),
            pytrace=False,
        )
    return folder


def test_site_builds_in_strict_mode(site):
    for page in (
        "index.html",
        "getting-started/index.html",
        "guides/decoding/index.html",
        "presets/ding_de_en_bahdanau/index.html",
        "presets/ding_de_en_bahdanau/attention.png",
        "benchmarks/bahdanau_fig2.png",
        "api/layers/index.html",
        "search/search_index.json",
    ):
        assert (site / page).is_file(), page
    # The model card's image, copied from applications/, where the card links it.
    card = (site / "presets/ding_de_en_bahdanau/index.html").read_text("utf-8")
    assert 'href="attention.png"' in card


def inventory(site):
    """The names of `objects.inv` (Sphinx's format: 4 lines, then zlib)."""
    data = (site / "objects.inv").read_bytes()
    for _ in range(4):
        data = data[data.index(b"\n") + 1 :]
    lines = zlib.decompress(data).decode("utf-8").splitlines()
    return {line.split(" ", 1)[0] for line in lines}


def public_names():
    """`(module name, name, object)` for each name of each `__all__`."""
    import keras_rnnattn

    modules = [keras_rnnattn]
    for info in pkgutil.iter_modules(keras_rnnattn.__path__, "keras_rnnattn."):
        if info.ispkg and not info.name.rsplit(".", 1)[1].startswith("_"):
            modules.append(importlib.import_module(info.name))
    names = []
    for module in modules:
        for name in getattr(module, "__all__", ()):
            try:
                obj = getattr(module, name)
            except AttributeError:  # a submodule the package does not import
                obj = importlib.import_module(f"{module.__name__}.{name}")
            names.append((module.__name__, name, obj))
    return names


def test_every_public_name_has_an_api_entry(site):
    rendered = inventory(site)
    names = public_names()
    assert len(names) > 70  # the lists were found
    missing = []
    for module, name, obj in names:
        candidates = {f"{module}.{name}"}
        if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
            candidates.add(f"{obj.__module__}.{obj.__qualname__}")
        if hasattr(obj, "__path__") or type(obj).__name__ == "module":
            candidates.add(obj.__name__)
        if not candidates & rendered:
            missing.append(f"{module}.{name}")
    assert not missing, (
        "public names without an entry on an API page (docs/api/*.md): "
        + ", ".join(missing)
    )


def _chromium():
    """`(browser, driver)` paths, or the reason the browser test cannot run."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, 'selenium is not installed: pip install -e ".[docs]"'
    browser = next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "chrome"))),
        None,
    )
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        return None, (
            "no headless Chromium and chromedriver on PATH "
            "(Debian: apt-get install chromium chromium-driver)"
        )
    return (browser, driver), None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(site):
    """The site served on 127.0.0.1; its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


PAGES = [
    ("", "keras-rnnattn"),
    ("guides/attention-layers/", "Attention layers in your own model"),
    ("api/layers/", "keras_rnnattn.layers"),
]


def test_pages_render_and_search_finds_attention_decoder(served, tmp_path):
    paths, reason = _chromium()
    if paths is None:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    shots = os.environ.get("DOCS_SCREENSHOTS") or str(tmp_path)
    os.makedirs(shots, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=paths[1])
    driver = webdriver.Chrome(options=options, service=service)
    try:
        for path, title in PAGES:
            driver.get(served + path)
            WebDriverWait(driver, 30).until(
                lambda d: d.execute_script("return document.readyState") == "complete"
            )
            heading = driver.find_element(By.CSS_SELECTOR, "article h1").text
            assert heading.startswith(title), (path, heading)
            assert driver.title.startswith(title), (path, driver.title)
            name = path.strip("/").replace("/", "_") or "home"
            driver.save_screenshot(os.path.join(shots, f"{name}.png"))
            errors = [
                entry
                for entry in driver.get_log("browser")
                if entry["level"] in ("SEVERE", "ERROR")
            ]
            assert not errors, (path, errors)

        # The search box of the header, as a reader uses it.
        driver.get(served)
        driver.find_element(By.CSS_SELECTOR, "label.md-header__button[for=__search]")
        driver.execute_script("document.getElementById('__search').click()")
        box = WebDriverWait(driver, 30).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "input.md-search__input")
        )
        box.send_keys("AttentionDecoder")
        box.send_keys(Keys.SPACE)
        results = WebDriverWait(driver, 60).until(
            lambda d: [
                r.text
                for r in d.find_elements(By.CSS_SELECTOR, ".md-search-result__item")
                if "AttentionDecoder" in r.text
            ]
        )
        driver.save_screenshot(os.path.join(shots, "search.png"))
        assert results
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        driver.quit()


def _hooks():
    spec = importlib.util.spec_from_file_location(
        "docs_hooks", os.path.join(REPO, "scripts", "docs_hooks.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_rewrites_repository_links_to_site_links(caplog):
    hooks = _hooks()
    rewrite = hooks._rewrite
    # A page of docs/ links the benchmark results and a model card's image.
    text = (
        "[results](../../benchmarks/RESULTS.md#gpu) and "
        "![map](../../applications/ding_de_en_bahdanau/attention.png), "
        "[a guide](export.md), [out](https://keras.io/x.md), [here](#anchor)"
    )
    assert rewrite(text, "docs/guides/presets.md", "guides/presets.md") == (
        "[results](../benchmarks/results.md#gpu) and "
        "![map](../presets/ding_de_en_bahdanau/attention.png), "
        "[a guide](export.md), [out](https://keras.io/x.md), [here](#anchor)"
    )
    # A model card links the figure beside the benchmarks and the migration guide.
    card = "[fig](../../benchmarks/bahdanau_fig2.png) [tfa](../../docs/migrating-from-tfa.md)"
    assert rewrite(
        card, "applications/cmudict_g2p/README.md", "presets/cmudict_g2p.md"
    ) == ("[fig](../benchmarks/bahdanau_fig2.png) [tfa](../migrating-from-tfa.md)")
    # A file the site does not have is left as it is, with a warning (an error
    # under --strict) that says what to do.
    with caplog.at_level("WARNING"):
        kept = rewrite("[code](../../keras_rnnattn/ops.py)", "docs/a/b.md", "a/b.md")
    assert kept == "[code](../../keras_rnnattn/ops.py)"
    assert "(keras_rnnattn/ops.py), which is not part of the site" in caplog.text


def test_griffe_extension_reads_keras_style_sections():
    spec = importlib.util.spec_from_file_location(
        "griffe_examples", os.path.join(REPO, "scripts", "griffe_examples.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    docstring = (
        "Summary.\n\nCall arguments:\n    x: a tensor\n        of any shape.\n"
        "    mask: or None.\n\nReturns:\n    y.\n\nExample:\n\n>>> f(1)\n[[2, 5]]\n"
    )
    text = module.call_arguments_list(module.examples_section(docstring))
    assert text == (
        "Summary.\n\nCall arguments:\n    - x: a tensor\n        of any shape.\n"
        "    - mask: or None.\n\nReturns:\n    y.\n\nExamples:\n    >>> f(1)\n"
        "    [[2, 5]]\n"
    )


def test_readme_links_point_at_files_and_headings_that_exist():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    headings = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.*)$", readme, flags=re.MULTILINE)
    }
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", readme):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        if path and not os.path.exists(os.path.join(REPO, path)):
            broken.append(target)
        elif not path and anchor not in headings:
            broken.append(target)
    assert not broken, f"README.md links to what does not exist: {broken}"
