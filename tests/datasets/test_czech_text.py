"""The Czech loaders: parsers on small files, and the installed packages."""

import pytest

from keras_rnnattn.datasets import (
    CZECH_SOURCES,
    DatasetNotFoundError,
    install_command,
    load_czech_text,
    load_fortunes_cs,
    load_libreoffice_help_cs,
    sources,
)
from keras_rnnattn.text import strip_diacritics
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

SPLITS = ("train", "validation", "test")


def real_source(name):
    """The corpus as installed here, found before the tests isolate the cache."""
    for place in sources.candidates(name):
        if place.exists():
            return place
    return None


REAL = {name: real_source(name) for name in CZECH_SOURCES}


def needs(name):
    return pytest.mark.skipif(
        REAL[name] is None, reason=f"corpus not installed: {install_command(name)}"
    )


def test_czech_fortunes_keep_prose_of_any_alphabet_and_skip_slovak(tmp_path):
    root = tmp_path / "cs"
    root.mkdir()
    (root / "citace").write_text(
        "Štěstí tvého života záleží na druhu tvých myšlenek.\n"
        "\t\t-- Marcus Aurelius\n%\nkrátké.\n%\n"
        "Čím déle se učíme, tím méně víme.\n%\n",
        encoding="utf-8",
    )
    (root / "citace.u8").write_text("Kopie souboru citace.\n%\n", encoding="utf-8")
    (root / "citace.dat").write_bytes(b"\0\0")
    (root / "klasik-sk").write_text("Slovenský citát tu nie je.\n%\n")
    assert load_fortunes_cs("all", path=root) == [
        "Štěstí tvého života záleží na druhu tvých myšlenek.",
        "Čím déle se učíme, tím méně víme.",
    ]


def test_czech_help_pages_keep_sentences_that_start_with_any_capital(tmp_path):
    page = tmp_path / "cs" / "text" / "a.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        '<p id="par_id1">Řádek se <b>smaže</b> klepnutím na tlačítko.</p>'
        '<p id="par_id2">malé písmeno, nevezme se.</p>'
        '<p id="par_id3">Zvolte $[officename] nejdříve.</p>',
        encoding="utf-8",
    )
    assert load_libreoffice_help_cs("all", path=tmp_path / "cs") == [
        "Řádek se smaže klepnutím na tlačítko."
    ]


@pytest.mark.parametrize("name", sorted(CZECH_SOURCES))
def test_a_missing_czech_corpus_names_the_command_that_installs_it(name):
    command = install_command(name)  # apt-get install fortunes-cs, ...
    assert command == f"apt-get install {sources.SOURCES[name][2]}"
    with pytest.raises(DatasetNotFoundError, match=command):
        CZECH_SOURCES[name]("test")
    with pytest.raises(ValueError, match="unknown sources"):
        load_czech_text("test", ["fortunes_sk"])


@needs("fortunes_cs")
def test_installed_fortunes_cs_counts_and_split_by_cookie():
    cookies = load_fortunes_cs("all", path=REAL["fortunes_cs"])
    assert len(cookies) == 6160
    assert sum(len(c.split()) for c in cookies) == 137_865
    parts = [load_fortunes_cs(s, path=REAL["fortunes_cs"]) for s in SPLITS]
    assert [len(p) for p in parts] == [5536, 293, 331]
    assert parts[2][0] == "Kdo čte, ten myslí, kdo myslí, ten uvažuje."
    # Czech text with marks: most cookies carry at least one.
    marked = sum(strip_diacritics(c) != c for c in cookies)
    assert marked > 0.8 * len(cookies)


@needs("libreoffice_help_cs")
def test_installed_czech_help_counts_and_split_by_page():
    pages = load_libreoffice_help_cs("all", path=REAL["libreoffice_help_cs"])
    assert len(pages) == 2306
    assert sum(len(p.split()) for p in pages) == 324_616
    parts = [
        load_libreoffice_help_cs(s, path=REAL["libreoffice_help_cs"]) for s in SPLITS
    ]
    assert [len(p) for p in parts] == [2069, 124, 113]
    assert set(parts[2]).isdisjoint(parts[0])
    assert parts[2][0].startswith('Vyvolá dialog "Otevřít", kterým importujete')
