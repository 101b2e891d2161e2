"""The Lee news corpus shipped with gensim (LGPL-2.1): 300 Australian news items."""

import importlib.util
import zipfile
from pathlib import Path

from keras_rnnattn.datasets.documents import split_documents
from keras_rnnattn.datasets.sources import cached_rows, find_source

MEMBER = "gensim/test/test_data/lee_background.cor"


def _installed():
    """`lee_background.cor` of an installed gensim, found without importing it."""
    spec = importlib.util.find_spec("gensim")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "test" / "test_data" / "lee_background.cor"
        if path.exists():
            return path
    return None


def _read(source):
    source = Path(source)
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            return wheel.read(MEMBER).decode("utf-8", errors="replace")
    return source.read_text(encoding="utf-8", errors="replace")


def load_lee_news(split="train", path=None):
    """News items from Australian wire reports, one document each (Lee et al., 2005).

    `lee_background.cor` of gensim's test data (gensim 4.4.0 wheel or an
    installed gensim; LGPL-2.1): 299 news items of 2001 (bushfires,
    politics, the Middle East, sport), 59,890 words of edited news prose,
    one item per line. Split by item with `split_documents`, keyed by line
    number.

    Args:
        split: `"train"`, `"validation"`, `"test"` or `"all"`.
        path: optional path of `lee_background.cor` or of a gensim wheel. By
            default the installed gensim's, then the wheel in `cache_dir()`
            (`fetch("lee_news")`).

    Returns:
        list of str, one per news item.

    Raises:
        DatasetNotFoundError: neither is there; the message names the
            command that downloads the wheel.

    Example:

    >>> items = load_lee_news("test")  # doctest: +SKIP
    """
    source = Path(path) if path is not None else _installed()
    if source is None or not source.exists():
        source = find_source("lee_news", path)

    def parse():
        lines = [" ".join(x.split()) for x in _read(source).splitlines()]
        return [(str(i), x) for i, x in enumerate(lines) if x]

    return split_documents(cached_rows("lee_news", [source], parse), split)
