"""Tests of the LibreOffice help loader on pages written in the help's HTML format."""

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    load_libreoffice_help_de_en,
    parse_help_paragraphs,
    parse_libreoffice_help,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def page(paragraphs):
    """A help page: `paragraphs` is a list of (element, id, inner HTML)."""
    body = "\n".join(
        f'<{tag} id="{key}" class="paragraph" dir="auto">{inner}</{tag}>'
        for tag, key, inner in paragraphs
    )
    return f"<html><head><title>t</title></head><body>\n{body}\n</body></html>"


# (element, id, German, English); the comment says what the loader must do.
ROWS = [
    ("p", "par_id1", "Klicken Sie auf <emph>OK</emph>.", "Click <emph>OK</emph> now."),
    ("h1", "hd_id2", "Eine neue Tabelle einfügen", "Insert a New Table"),  # no end mark
    ("p", "par_id3", "Wählen Sie Format – Zellen:", "Choose Format - Cells:"),  # kept
    ("p", "par_id4", "Zu kurz.", "Too short."),  # 2 words
    (
        "p",
        "par_id5",
        "Dies ist noch nicht übersetzt.",
        "Dies ist noch nicht übersetzt.",
    ),
    ("p", "par_id6", "Siehe $[officename] Hilfe.", "See the $[officename] help."),
    ("p", "par_id7", "Ein Wert &amp; ein Text.", "A value &amp; a text."),  # unescaped
    (
        "p",
        "par_id8",
        "Noch einmal klicken Sie OK.",
        "Click <emph>OK</emph> now.",
    ),  # seen
    ("td", "par_id9", "Die Zelle ist leer.", "the cell is empty."),  # lower case
    ("p", "other_id", "Das zählt nicht hier.", "This does not count here."),  # id
]
EXPECTED = [
    ("Klicken Sie auf OK.", "Click OK now."),
    ("Wählen Sie Format – Zellen:", "Choose Format - Cells:"),
    ("Ein Wert & ein Text.", "A value & a text."),
]


def write_help(root, pages):
    """Writes `{relative path: (german rows, english rows)}` under root/de, root/en-US."""
    for rel, (de_rows, en_rows) in pages.items():
        for lang, rows in (("de", de_rows), ("en-US", en_rows)):
            path = root / lang / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page(rows), encoding="utf-8")
    return root / "de", root / "en-US"


def rows_of(rows, side):
    return [(tag, key, de if side == 0 else en) for tag, key, de, en in rows]


def test_paragraphs_by_id_with_tags_and_entities_removed():
    markup = page(
        [
            ("p", "par_id1", "Press <item type='keycode'>Enter</item> , then go."),
            ("h2", "hd_id2", "Title &lt;here&gt;"),
            ("p", "par_id3", "   "),
            ("p", "bm_id4", "not a paragraph id"),
        ]
    )
    assert parse_help_paragraphs(markup) == {
        "par_id1": "Press Enter, then go.",
        "hd_id2": "Title <here>",
    }


def test_alignment_follows_every_filter(tmp_path):
    de, en = write_help(
        tmp_path,
        {
            "text/a/page1.html": (rows_of(ROWS, 0), rows_of(ROWS, 1)),
            # No English page of the same path: skipped.
            "text/b/only_german.html": (rows_of(ROWS[:1], 0), []),
        },
    )
    (tmp_path / "en-US" / "text/b/only_german.html").unlink()
    assert parse_libreoffice_help(de, en) == EXPECTED


def test_pairs_align_by_page_and_id_not_by_order(tmp_path):
    german = [
        ("p", "par_id2", "Der zweite Satz ist hier."),
        ("p", "par_id1", "Der erste Satz ist hier."),
    ]
    english = [
        ("p", "par_id1", "The first sentence is here."),
        ("p", "par_id2", "The second sentence is here."),
    ]
    de, en = write_help(
        tmp_path,
        {
            "text/x.html": (german, english),
            # The same ids on another page are other paragraphs.
            "text/y.html": (
                [("p", "par_id1", "Ein ganz anderer Satz hier.")],
                [("p", "par_id1", "Quite another sentence here.")],
            ),
        },
    )
    assert parse_libreoffice_help(de, en) == [
        ("Der erste Satz ist hier.", "The first sentence is here."),
        ("Der zweite Satz ist hier.", "The second sentence is here."),
        ("Ein ganz anderer Satz hier.", "Quite another sentence here."),
    ]


def test_canonical_split_and_cache(isolated_sources):
    n = 1600
    rows = [
        ("p", f"par_id{i}", f"Das ist der Satz {i}.", f"This is sentence {i}.")
        for i in range(n)
    ]
    de, en = write_help(
        isolated_sources / "help", {"text/p.html": (rows_of(rows, 0), rows_of(rows, 1))}
    )
    everything = load_libreoffice_help_de_en("all", de, en)
    assert len(everything) == n and everything[0] == (
        "Das ist der Satz 0.",
        "This is sentence 0.",
    )
    idx = np.random.default_rng(1234).permutation(n)
    test = load_libreoffice_help_de_en("test", de, en)
    validation = load_libreoffice_help_de_en("validation", de, en)
    train = load_libreoffice_help_de_en("train", de, en)
    assert (len(test), len(validation), len(train)) == (1000, 500, 100)
    assert test[0] == everything[idx[0]] and train[-1] == everything[idx[-1]]
    assert (isolated_sources / "cache" / "libreoffice_help_de_en.tsv").exists()
    assert load_libreoffice_help_de_en("all", de, en) == everything  # from the cache


def test_missing_package_names_the_install_command(isolated_sources):
    with pytest.raises(
        DatasetNotFoundError, match="apt-get install libreoffice-help-de"
    ):
        load_libreoffice_help_de_en()
    german = isolated_sources / "root" / "usr/share/libreoffice/help/de"
    german.mkdir(parents=True)
    with pytest.raises(
        DatasetNotFoundError, match="apt-get install libreoffice-help-en-us"
    ):
        load_libreoffice_help_de_en()
