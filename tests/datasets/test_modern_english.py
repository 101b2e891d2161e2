"""The modern English loaders: parsers on small files, splits by document, and
the real corpora's counts where they are installed."""

import hashlib
import io
import tarfile
import zipfile

import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    document_bucket,
    load_fortunes,
    load_lee_news,
    load_libreoffice_help_en,
    load_nyt_editorials,
    load_python_docs,
    parse_fortunes,
    parse_rest_prose,
    sources,
    split_documents,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

REST = """\
.. _tut-if:

Control Flow
============

Perhaps the most well-known statement is the :keyword:`if` statement, and
``elif`` is short for `else if <https://example.org>`_. For example::

   >>> if x < 0:
   ...     x = 0

* a list item that is not prose.

How do I stop a program?
------------------------

Call :func:`sys.exit` or raise :exc:`~builtins.SystemExit` in the main thread.

.. note::

   A note that is indented under a directive.
"""


def test_rest_prose_keeps_sentences_and_faq_questions_and_drops_markup():
    assert parse_rest_prose(REST) == [
        "Perhaps the most well-known statement is the if statement, and elif is "
        "short for else if. For example:",
        "How do I stop a program?",
        "Call sys.exit or raise SystemExit in the main thread.",
    ]


def test_fortunes_keep_prose_and_drop_attributions_verse_and_pictures():
    text = (
        "A bore is a man who talks so much about himself that you can't talk\n"
        "about yourself.\n\t\t-- Cynic\n%\n"
        "        /\\_/\\\n       ( o.o )\n%\n"
        "Q: Why did the chicken cross the road?\nA: To get to the other side.\n%\n"
        "too short.\n%\n"
    )
    assert parse_fortunes(text) == [
        "A bore is a man who talks so much about himself that you can't talk "
        "about yourself.",
        "Q: Why did the chicken cross the road? A: To get to the other side.",
    ]


def test_split_by_document_is_sha1_of_the_key_and_stable_under_additions():
    keyed = [(f"doc{i}", i) for i in range(400)]
    splits = {s: split_documents(keyed, s) for s in ("train", "validation", "test")}
    assert sorted(sum(splits.values(), [])) == list(range(400))
    for i in splits["test"]:
        assert int(hashlib.sha1(f"doc{i}".encode()).hexdigest(), 16) % 20 == 0
    assert 5 < len(splits["test"]) < 40 and 5 < len(splits["validation"]) < 40
    # A new document never moves another between splits.
    more = split_documents(keyed + [("another", 999)], "test")
    assert [d for d in more if d != 999] == splits["test"]
    assert document_bucket("doc0") == int(hashlib.sha1(b"doc0").hexdigest(), 16) % 20


def test_python_docs_documents_are_ten_paragraphs_of_a_file(tmp_path):
    root = tmp_path / "_sources"
    (root / "faq").mkdir(parents=True)
    paragraphs = [f"Paragraph number {i} is about Python code." for i in range(25)]
    (root / "faq" / "general.rst.txt").write_text("\n\n".join(paragraphs) + "\n")
    (root / "library").mkdir()  # not prose: not read
    (root / "library" / "os.rst.txt").write_text("The os module is not read here.\n")
    docs = load_python_docs("all", path=root)
    assert [d.count("\n") + 1 for d in docs] == [10, 10, 5]
    assert docs[0].split("\n")[0] == paragraphs[0]
    n = sum(
        len(load_python_docs(s, path=root)) for s in ("train", "validation", "test")
    )
    assert n == 3


def test_fortunes_loader_reads_each_file_but_pictures(tmp_path):
    root = tmp_path / "fortunes"
    root.mkdir()
    (root / "people").write_text("A friend is a present you give yourself.\n%\n")
    (root / "people.dat").write_bytes(b"\0\0")
    (root / "art").write_text("A picture file that would count as prose.\n%\n")
    assert load_fortunes("all", path=root) == [
        "A friend is a present you give yourself."
    ]


def test_lee_news_reads_a_wheel_and_nyt_groups_sentences_by_article(tmp_path):
    wheel = tmp_path / "gensim-4.4.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(
            "gensim/test/test_data/lee_background.cor",
            "Fires burn near Sydney.  Crews wait.\nThe minister spoke today.\n",
        )
    assert load_lee_news("all", path=wheel) == [
        "Fires burn near Sydney. Crews wait.",
        "The minister spoke today.",
    ]
    rows = (
        "1_1\t0.4\tOn Dec. 19, it rained.\n1_2\t0.1\tIt stopped.\n2_1\t0\tNew item.\n"
    )
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as t:
        data = rows.encode()
        info = tarfile.TarInfo("hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    archive = tmp_path / "hutto_ICWSM_2014.tar.gz"
    archive.write_bytes(inner.getvalue())
    assert load_nyt_editorials("all", path=archive) == [
        "On Dec. 19, it rained. It stopped.",
        "New item.",
    ]


def test_help_pages_are_documents_of_sentence_like_paragraphs(tmp_path):
    page = tmp_path / "en-US" / "text" / "a.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        '<p id="par_id1">Click <b>OK</b> to close the dialog.</p>'
        '<p id="par_id2">no capital, not kept.</p>'
        '<h1 id="hd_id3">Printing Documents</h1>'
        '<p id="par_id4">Choose $[officename] first.</p>'
    )
    assert load_libreoffice_help_en("all", path=tmp_path / "en-US") == [
        "Click OK to close the dialog."
    ]


@pytest.mark.parametrize(
    "loader, name",
    [
        (load_python_docs, "python_docs"),
        (load_fortunes, "fortunes"),
        (load_lee_news, "lee_news"),
    ],
)
def test_a_missing_corpus_names_the_command_that_installs_it(loader, name, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda n, *a: None if n == "gensim" else real(n, *a),
    )
    with pytest.raises(DatasetNotFoundError, match=sources.SOURCES[name][2]):
        loader("test")


def _installed(name):
    try:
        return sources.find_source(name)
    except DatasetNotFoundError:
        return None


# Found before the autouse fixture points the cache and system root elsewhere.
REAL = {
    name: _installed(name)
    for name in ("python_docs", "fortunes", "lee_news", "movie_snippets")
}
REAL["libreoffice_help_en"] = _installed("libreoffice_help_en")


@pytest.mark.parametrize(
    "loader, name, documents, words",
    [
        (load_python_docs, "python_docs", 397, 134_228),
        (load_fortunes, "fortunes", 10_420, 252_593),
        (load_lee_news, "lee_news", 300, 59_890),
        (load_nyt_editorials, "movie_snippets", 498, 90_600),
        (load_libreoffice_help_en, "libreoffice_help_en", 2_306, 400_203),
    ],
)
def test_real_corpora_counts_and_disjoint_splits(loader, name, documents, words):
    if REAL[name] is None:
        pytest.skip(f"corpus not installed: {sources.install_command(name)}")
    docs = loader("all", path=REAL[name])
    assert (len(docs), sum(len(d.split()) for d in docs)) == (documents, words)
    parts = [loader(s, path=REAL[name]) for s in ("train", "validation", "test")]
    assert sum(len(p) for p in parts) == documents
    assert 0.03 < len(parts[2]) / documents < 0.08
    assert not set(parts[2]) & set(parts[0])
