"""Tests of the Ding de-en loader on small files written in the dictionary's format."""

import numpy as np
import pytest

from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    load_ding_de_en,
    load_ding_de_en_alternatives,
    load_ding_de_en_lexicon,
    parse_ding,
    parse_ding_alternatives,
    parse_ding_lexicon,
    sources,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

# Invented lines in the format of usr/share/trans/de-en; the comment says what
# the canonical recipe must do with each one.
LINES = [
    "# Version :: devel",  # comment: skipped even with '::'
    "Kein Trenner hier. The line has no separator.",  # no '::': skipped
    "Haus {n} | Das Haus ist alt. :: house | The house is old.",  # part 2 kept
    "Baum | Der Baum ist grün. :: tree",  # 2 parts vs 1: whole line skipped
    "Er kam spät. :: He came late.; He arrived late.",  # ';' in English: dropped
    "Er ist krank {adj} [med.] (zurzeit). :: He is  ill [med.] (now).",  # cleaned
    "Der Hund schläft. :: the dog sleeps.",  # English not starting A-Z
    "Über alles. :: Über alles is a song.",  # 'Ü' is not in A-Z
    "Der Hund schläft :: The dog sleeps",  # no final . ? !
    "Wo ist er? :: Where is he?",  # '?' kept
    "Komm sofort her! :: Come here at once!",  # '!' kept
    "Er gibt jdm. etw. :: He gives sb. sth. back.",  # placeholders dropped
    "Sie hilft jdn. heute. :: She helps him today.",  # 'jdn.' in German dropped
    "Er fragt jds. Namen. :: He asks for a name.",  # 'jds.' dropped
    "Er/Sie kommt. :: He or she comes.",  # '/' dropped
    "Und dann … :: And then came the end…",  # '…' dropped
    "Na ja... :: Well, I never did...",  # '...' dropped
    "Geh heim. :: Go home.",  # 2 English words: too few
    "Das ist gut. :: That is good.",  # 3 words: kept
    "Eins zwei drei. :: Many" + " word" * 18 + " end.",  # 20 words: kept
    "Zu lang. :: Many" + " word" * 19 + " end.",  # 21 words: too many
    "Das ist prima. :: That is good.",  # English seen before: dropped
    "Ein Satz | Ein Satz. :: A phrase | A sentence here.",  # part 1 fails, 2 kept
]
EXPECTED = [
    ("Das Haus ist alt.", "The house is old."),
    ("Er ist krank.", "He is ill."),
    ("Wo ist er?", "Where is he?"),
    ("Komm sofort her!", "Come here at once!"),
    ("Das ist gut.", "That is good."),
    ("Eins zwei drei.", "Many" + " word" * 18 + " end."),
    ("Ein Satz.", "A sentence here."),
]


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_parse_follows_every_rule_of_the_recipe():
    assert parse_ding(LINES) == EXPECTED


def test_loader_reads_a_file_and_caches_tsv(isolated_sources):
    source = write(isolated_sources / "de-en", LINES)
    pairs = load_ding_de_en("all", path=source)
    assert pairs == EXPECTED
    cache = isolated_sources / "cache" / "ding_de_en.tsv"
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and len(lines) == 1 + len(EXPECTED)
    assert lines[1] == "Das Haus ist alt.\tThe house is old."
    # The cache is read back while the source is unchanged, re-made when it changes.
    assert load_ding_de_en("all", path=source) == EXPECTED
    write(source, LINES[:3])
    assert load_ding_de_en("all", path=source) == EXPECTED[:1]


def test_canonical_split_is_the_default_rng_permutation(isolated_sources):
    n = 1600
    lines = [
        f"Satz Nummer {i} ist hier. :: Sentence number {i} is here." for i in range(n)
    ]
    source = write(isolated_sources / "de-en", lines)
    everything = load_ding_de_en("all", path=source)
    assert len(everything) == n
    idx = np.random.default_rng(1234).permutation(n)
    test = load_ding_de_en("test", path=source)
    validation = load_ding_de_en("validation", path=source)
    train = load_ding_de_en("train", path=source)
    assert (len(test), len(validation), len(train)) == (1000, 500, 100)
    assert test[0] == everything[idx[0]]
    assert validation[0] == everything[idx[1000]]
    assert train[-1] == everything[idx[-1]]
    assert sorted(test + validation + train) == sorted(everything)
    assert load_ding_de_en("test", path=source) == test  # deterministic


def test_standard_location_then_cache(isolated_sources):
    with pytest.raises(DatasetNotFoundError) as info:
        load_ding_de_en()
    message = str(info.value)
    assert "apt-get install trans-de-en" in message
    assert "fetch('ding_de_en')" in message
    cached = isolated_sources / "cache" / "trans-de-en" / "usr/share/trans/de-en"
    cached.parent.mkdir(parents=True)
    write(cached, LINES)
    assert load_ding_de_en("all") == EXPECTED
    system = sources.SYSTEM_ROOT / "usr/share/trans/de-en"
    system.parent.mkdir(parents=True)
    write(system, LINES[:3])  # the system install comes first
    assert load_ding_de_en("all") == EXPECTED[:1]


def test_missing_explicit_path_and_bad_split(isolated_sources):
    with pytest.raises(FileNotFoundError, match="apt-get install trans-de-en"):
        load_ding_de_en(path=isolated_sources / "nowhere")
    with pytest.raises(ValueError, match="Received: split='dev'"):
        load_ding_de_en("dev")


@pytest.mark.parametrize(
    "bad", ["sth.", "sb.", "etw.", "jdm.", "jdn.", "jds.", "/", "…", "..."]
)
@pytest.mark.parametrize("side", ["german", "english"])
def test_each_forbidden_marker_drops_the_pair_on_either_side(bad, side):
    good = "Das ist heute gut. :: That is good today."
    german = f"Das ist {bad} gut." if side == "german" else "Das ist gut."
    english = f"That is {bad} good." if side == "english" else "That is good."
    assert parse_ding([good, f"{german} :: {english}"]) == [
        ("Das ist heute gut.", "That is good today.")
    ]
    assert parse_ding(["Das ist gut. :: That is good."]) == [
        ("Das ist gut.", "That is good.")
    ]


def test_lexicon_pairs_synonyms_and_never_repeats_a_sentence_side(tmp_path):
    lines = [
        "# Version :: devel",
        # Synonyms paired in order when both sides have as many.
        "Haus {n}; Gebäude {n} | Häuser {pl} :: house; building | houses",
        # Unequal synonym counts: only the first of each.
        "schnell {adj}; rasch; flink :: fast; quick",
        # Unequal part counts: the whole line is skipped, as in parse_ding.
        "Baum | Bäume :: tree",
        # Placeholders dropped; the sentence part is canonical: excluded.
        "jdm. helfen | Das Haus ist alt. :: to help sb. | The house is old.",
        # Same English as a canonical sentence, other German: excluded.
        "Das Haus ist sehr alt. :: The house is old.",
        # Same German as a canonical sentence: excluded.
        "Das Haus ist alt. :: the building is old",
        # A sentence the canonical recipe drops (';' in English) is kept.
        "Er kam spät. :: He came late.; He arrived late.",
        "Haus {n} :: house",  # seen before: once
    ]
    expected = [
        ("Haus", "house"),
        ("Gebäude", "building"),
        ("Häuser", "houses"),
        ("schnell", "fast"),
        ("Er kam spät.", "He came late."),
    ]
    canonical = parse_ding(lines)
    assert canonical == [("Das Haus ist alt.", "The house is old.")]
    assert parse_ding_lexicon(lines, exclude=canonical) == expected
    source = write(tmp_path / "de-en", lines)
    assert load_ding_de_en_lexicon(path=source) == expected
    # No side of any lexicon pair is a side of the canonical sentence pairs.
    sides = {x for pair in canonical for x in pair}
    assert not sides & {x for pair in expected for x in pair}


def test_alternatives_keep_the_first_of_each_and_never_a_canonical_side(tmp_path):
    lines = [
        "Das Haus ist alt. :: The house is old.",  # canonical
        # One alternative word on each side, punctuation after the last one.
        "Darf/Dürfte ich kurz stören? :: May/Can I interrupt?",
        "Er hat es gebunkert. :: He tucked/stashed/hid it away.",
        "Es geht bis zum Fluss. :: It reaches the river/stream.",
        # No '/' at all: the canonical recipe's, not this one's.
        "Er kam spät. :: He came late.",
        # Spaced alternatives and slashes beside digits: dropped.
        "Sie sollte da sein. :: She ought to be here by now / by this time.",
        "Wir haben 24/7 offen. :: We are open every day.",
        "Es fährt 200 km/h. :: It goes at 125 miles an hour.",
        # ';' in English, a placeholder, too short, not a sentence: dropped.
        "Er ging/lief. :: He went/walked.; He left.",
        "Er gibt/schenkt jdm. etw. :: He gives/hands sb. sth. back.",
        "Geh/Lauf heim. :: Go/Run home.",
        "Haus/Gebäude :: house/building",
        # The first alternatives make a canonical side: excluded.
        "Das Haus/Gebäude ist alt/antik. :: The house/building is really old.",
        "Das Haus ist sehr alt. :: The house/building is old.",
        # The same pair again: once.
        "Darf/Kann ich kurz stören? :: May/Could I interrupt?",
    ]
    expected = [
        ("Darf ich kurz stören?", "May I interrupt?"),
        ("Er hat es gebunkert.", "He tucked it away."),
        ("Es geht bis zum Fluss.", "It reaches the river."),
    ]
    canonical = parse_ding(lines)
    assert canonical == [
        ("Das Haus ist alt.", "The house is old."),
        ("Er kam spät.", "He came late."),
    ]
    assert parse_ding_alternatives(lines, exclude=canonical) == expected
    source = write(tmp_path / "de-en", lines)
    assert load_ding_de_en_alternatives(path=source) == expected
    sides = {x for pair in canonical for x in pair}
    assert not sides & {x for pair in expected for x in pair}
