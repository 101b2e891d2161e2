"""Tests of the World English Bible loader on a small SWORD zText module."""

import struct
import zlib

import pytest

from keras_rnnattn.datasets import DatasetNotFoundError, load_world_english_bible
from keras_rnnattn.datasets.world_english_bible import osis_to_text, read_ztext
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def write_ztext(folder, testament, blocks):
    """Writes `<t>.bzz/.bzs/.bzv` for a list of blocks, each a list of entries."""
    data, block_index, entry_index = b"", b"", b""
    for number, entries in enumerate(blocks):
        raw = b""
        for entry in entries:
            encoded = entry.encode("utf-8")
            entry_index += struct.pack("<IIH", number, len(raw), len(encoded))
            raw += encoded
        packed = zlib.compress(raw)
        block_index += struct.pack("<III", len(data), len(packed), len(raw))
        data += packed
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{testament}.bzz").write_bytes(data)
    (folder / f"{testament}.bzs").write_bytes(block_index)
    (folder / f"{testament}.bzv").write_bytes(entry_index)


OT = [
    [
        '<chapter n="1" osisID="Gen.1" sID="Gen.1"/>',
        '<w lemma="strong:H0430">In</w> the beginning, <w>God</w><note placement="foot">'
        "1:1 a footnote</note><w>created</w> the heavens.",
        "",  # empty entries are skipped
    ],
    ['<title type="x-gen">A heading</title>The earth was &amp; is; “good”.'],
]
NT = [["Grace be with all. Amen."]]


def test_read_ztext_and_strip_markup(tmp_path):
    write_ztext(tmp_path, "ot", OT)
    entries = read_ztext(tmp_path, "ot")
    assert len(entries) == 3 and entries[0].startswith("<chapter")
    assert osis_to_text(entries[0]) == ""
    assert osis_to_text(entries[1]) == "In the beginning, God created the heavens."
    assert osis_to_text(entries[2]) == "The earth was & is; “good”."
    assert osis_to_text("word<note>n</note>, next") == "word, next"


def test_loader_joins_lines_and_splits_in_blocks(isolated_sources):
    folder = isolated_sources / "engWEB2015eb"
    write_ztext(folder, "ot", OT)
    write_ztext(folder, "nt", NT)
    assert load_world_english_bible("all", path=folder) == (
        "In the beginning, God created the heavens.\n"
        "The earth was & is; “good”.\n"
        "Grace be with all. Amen."
    )
    verses = [[f"Verse {i}." for i in range(b * 50, b * 50 + 50)] for b in range(80)]
    write_ztext(folder, "ot", verses)
    write_ztext(folder, "nt", [["The end."]])
    parts = {s: load_world_english_bible(s, path=folder).split("\n") for s in
             ("train", "validation", "test", "all")}  # fmt: skip
    # 4,001 lines make 41 blocks of 100: 2 test blocks, 2 validation blocks.
    assert len(parts["all"]) == 4001
    assert len(parts["test"]) == len(parts["validation"]) == 200
    assert len(parts["train"]) == 4001 - 400
    assert sorted(parts["train"] + parts["validation"] + parts["test"]) == sorted(
        parts["all"]
    )
    # Each split keeps whole blocks in Bible order.
    first = int(parts["test"][0].split()[1].rstrip("."))
    assert first % 100 == 0
    assert parts["test"][:100] == [f"Verse {first + i}." for i in range(100)]


def test_missing_module_names_the_package():
    with pytest.raises(DatasetNotFoundError, match="apt-get install sword-text-web"):
        load_world_english_bible()
