"""Every metric a model card or the README's preset table quotes is in the preset's metadata.

The convention the cards follow (written out in saved_models/README.md, "Numbers in
the cards"):

- A scope names where in `metadata.json["metrics"]` a number must be:
  `<!-- metrics PRESET -->` is the preset's own metrics (every key but `peers`),
  `<!-- metrics PRESET.peers.g2p_en -->` the values under that key,
  `<!-- metrics PRESET.no_attention_* -->` the keys with that prefix. The comments
  do not show on a rendered page.
- README.md, table of presets: each number in **bold** in the "test result" cell is
  a measured number: of the row's preset, or, after a scope comment in the cell, of
  that scope. Every row has at least one.
- applications/<name>/README.md, any table whose header's first cell is "system" or
  "model": a row whose first cell starts with "this preset" quotes that preset's own
  metrics; a row whose first cell holds a scope comment quotes that scope. Every
  number in such a row's other cells, the columns "decoding", "notes", "training" and
  "file" aside, is checked. Every card has at least one such row, and every preset is
  quoted by one.

Each preset's headline metric (`preset_catalog.headline_metric`, what `keras-rnnattn
presets` shows) must be among the numbers of its own rows in a card (the rows of its
whole metrics, not of a key) and among the bold numbers of its README row before any
scope comment: a number that also equals some other metric cannot stand in for it.

"In the metadata" means: equal, at the precision written, to a number in the scope
(nested values included; a fraction also matches as a percentage: 0.823 is 82.3%).
A retrained preset whose card keeps an old number fails here, with the number and the
card named.
"""

import fnmatch
import json
import os
import re

import pytest

from keras_rnnattn.presets.catalog import headline_metric
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAVED = os.path.join(REPO, "saved_models")
PRESETS = sorted(
    name
    for name in os.listdir(SAVED)
    if os.path.isfile(os.path.join(SAVED, name, "metadata.json"))
)
CARDS = sorted(
    name
    for name in os.listdir(os.path.join(REPO, "applications"))
    if os.path.isfile(os.path.join(REPO, "applications", name, "README.md"))
    and name in PRESETS
)
UNCHECKED_COLUMNS = {"decoding", "notes", "training", "file"}
MARKER = re.compile(r"<!--\s*metrics\s+([\w.*]+)\s*-->")
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])")
BOLD = re.compile(r"\*\*(.+?)\*\*")


def load_metrics(preset):
    with open(os.path.join(SAVED, preset, "metadata.json"), encoding="utf-8") as f:
        return json.load(f)["metrics"]


def numbers_in(text):
    """The numbers written in `text`, each as (value, decimals, as written)."""
    text = MARKER.sub(" ", text)
    found = []
    for match in NUMBER.finditer(text):
        whole, fraction = match.group(1), match.group(2)
        written = whole + ("." + fraction if fraction else "")
        value = float(written.replace(",", ""))
        found.append((value, len(fraction) if fraction else 0, written))
    return found


def leaves(value):
    """Every number nested in a metrics value (bools and strings aside)."""
    if isinstance(value, bool) or isinstance(value, str) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    items = value.values() if isinstance(value, dict) else value
    return [number for item in items for number in leaves(item)]


def scope_values(metrics_by_preset, reference):
    """The numbers a row may quote: `PRESET`, `PRESET.key.key` or `PRESET.prefix_*`."""
    preset, _, path = reference.partition(".")
    if preset not in metrics_by_preset:
        raise KeyError(f"no preset {preset!r} in saved_models/")
    node = metrics_by_preset[preset]
    if not path:
        return leaves({k: v for k, v in node.items() if k != "peers"})
    head, _, rest = path.partition(".")
    if "*" in head:
        chosen = [v for k, v in node.items() if fnmatch.fnmatch(k, head)]
        if not chosen:
            raise KeyError(f"no metric of {preset} matches {head!r}")
        return [x for v in chosen for x in leaves(v)]
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            raise KeyError(f"no metric {path!r} in {preset}'s metadata.json")
        node = node[key]
    return leaves(node)


def matches(number, decimals, values):
    """Whether a written number equals one of `values` at the precision written."""
    tolerance = 0.5 * 10.0**-decimals + 1e-9
    for value in values:
        if abs(value - number) <= tolerance:
            return True
        if 0 < abs(value) <= 1 and abs(100 * value - number) <= tolerance:
            return True
    return False


def split_row(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables(text):
    """Each markdown table of `text` as (header cells, [(line number, cells), ...])."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and "---" in lines[i + 1]:
            header, rows, j = split_row(lines[i]), [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append((j + 1, split_row(lines[j])))
                j += 1
            found.append((header, rows))
            i = j
        else:
            i += 1
    return found


def plain(cell):
    return cell.replace("*", "").replace("`", "").strip().lower()


def card_rows(card, text):
    """The rows of a card's results tables that quote metrics, with their scope."""
    checked = []
    for header, rows in tables(text):
        if plain(header[0]) not in ("system", "model"):
            continue
        columns = [i for i, h in enumerate(header) if plain(h) not in UNCHECKED_COLUMNS]
        for line, cells in rows:
            marker = MARKER.search(cells[0])
            if marker:
                reference = marker.group(1)
            elif re.match(r"this preset\b(?!')", plain(cells[0])):
                reference = card
            else:
                continue
            quoted = " ".join(cells[i] for i in columns if 0 < i < len(cells))
            checked.append((line, reference, quoted))
    return checked


def headline_problem(where, preset, quoted, metrics_by_preset):
    """A line naming `preset`'s headline metric when no number of `quoted` is it."""
    key, value = headline_metric(metrics_by_preset[preset])
    if any(matches(number, decimals, [value]) for number, decimals, _ in quoted):
        return []
    return [f"{where}: {preset}'s headline metric {key} = {value:g} is not quoted"]


def card_problems(card, text, metrics_by_preset):
    """What a card quotes that its presets' metadata does not hold, one line each."""
    problems, where, own = [], f"applications/{card}/README.md", {}
    rows = card_rows(card, text)
    if not rows:
        problems.append(
            f"{where}: no results row starts with 'this preset' or a marker"
        )
    for line, reference, quoted in rows:
        try:
            values = scope_values(metrics_by_preset, reference)
        except KeyError as error:
            problems.append(f"{where}:{line}: {error.args[0]}")
            continue
        if reference in metrics_by_preset:
            own.setdefault(reference, []).extend(numbers_in(quoted))
        for number, decimals, written in numbers_in(quoted):
            if not matches(number, decimals, values):
                problems.append(
                    f"{where}:{line}: {written} is not in the metrics of {reference}"
                )
    for preset, quoted in own.items():
        problems += headline_problem(where, preset, quoted, metrics_by_preset)
    return problems


def readme_problems(text, metrics_by_preset):
    """What the README's preset table quotes in bold that the metadata does not hold."""
    problems, seen = [], set()
    for header, rows in tables(text):
        if plain(header[0]) != "preset" or "test result" not in map(plain, header):
            continue
        column = list(map(plain, header)).index("test result")
        for line, cells in rows:
            preset = plain(cells[0])
            seen.add(preset)
            if preset not in metrics_by_preset:
                problems.append(
                    f"README.md:{line}: no preset {preset!r} in saved_models/"
                )
                continue
            if not BOLD.search(cells[column]):
                problems.append(
                    f"README.md:{line}: {preset}'s test result has no bold metric"
                )
            # The cell in pieces: before the first scope comment the row's preset,
            # after each the scope it names.
            pieces = MARKER.split(cells[column])
            scopes = [preset] + pieces[1::2]
            own = numbers_in(" ".join(BOLD.findall(pieces[0])))
            where = f"README.md:{line}"
            problems += headline_problem(where, preset, own, metrics_by_preset)
            for reference, piece in zip(scopes, pieces[0::2]):
                try:
                    values = scope_values(metrics_by_preset, reference)
                except KeyError as error:
                    problems.append(f"README.md:{line}: {error.args[0]}")
                    continue
                for number, decimals, written in numbers_in(
                    " ".join(BOLD.findall(piece))
                ):
                    if not matches(number, decimals, values):
                        problems.append(
                            f"README.md:{line}: {written} is not in the metrics of {reference}"
                        )
    for preset in sorted(set(metrics_by_preset) - seen):
        problems.append(f"README.md: the preset table has no row for {preset}")
    return problems


def read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def metrics_by_preset():
    return {preset: load_metrics(preset) for preset in PRESETS}


@pytest.mark.parametrize("card", CARDS)
def test_card_numbers_are_in_the_metadata(card, metrics_by_preset):
    problems = card_problems(
        card, read("applications", card, "README.md"), metrics_by_preset
    )
    assert not problems, "\n".join(problems)


def test_every_preset_is_quoted_by_a_card(metrics_by_preset):
    quoted = set()
    for card in CARDS:
        for _, reference, _ in card_rows(card, read("applications", card, "README.md")):
            quoted.add(reference.partition(".")[0])
    assert quoted == set(PRESETS)


def test_readme_preset_table_numbers_are_in_the_metadata(metrics_by_preset):
    problems = readme_problems(read("README.md"), metrics_by_preset)
    assert not problems, "\n".join(problems)


def test_a_changed_metric_is_named(metrics_by_preset):
    # A retrained cmudict_g2p with another beam-4 WER: the card and the README
    # still saying 31.67 / 31.7 are both named.
    changed = json.loads(json.dumps(metrics_by_preset))
    old = changed["cmudict_g2p"]["test_beam4_wer"]
    changed["cmudict_g2p"]["test_beam4_wer"] = old - 2.5
    card = card_problems(
        "cmudict_g2p", read("applications", "cmudict_g2p", "README.md"), changed
    )
    assert any(f"{old:.2f} is not in the metrics of cmudict_g2p" in p for p in card), (
        card
    )
    readme = readme_problems(read("README.md"), changed)
    assert any(
        f"{old:.1f} is not in the metrics of cmudict_g2p" in p for p in readme
    ), readme


@pytest.mark.parametrize(
    "written, values, expected",
    [
        ("31.67", [31.67], True),
        ("31.7%", [31.67], True),
        ("31.6", [31.67], False),
        ("82.3%", [0.823], True),
        ("907", [907.4], True),
        ("734", [559.4], False),
        ("1,685,577", [1685577], True),
        ("3.066", [3.066493], True),
        ("3.07", [3.066493], True),
        ("3.06", [3.066493], False),
    ],
)
def test_rounding_rule(written, values, expected):
    ((number, decimals, _),) = numbers_in(written)
    assert matches(number, decimals, values) is expected


def test_a_changed_headline_is_named_even_when_another_metric_equals_it(
    metrics_by_preset,
):
    # wordnet_topics's 81.0% is also its accuracy on the first 500 test glosses:
    # a new test accuracy must still show in its card and README row.
    changed = json.loads(json.dumps(metrics_by_preset))
    changed["wordnet_topics"]["test_accuracy"] = 0.83
    card_text = read("applications", "wordnet_topics", "README.md")
    card = card_problems("wordnet_topics", card_text, changed)
    assert any("headline metric test_accuracy = 0.83" in p for p in card), card
    readme = readme_problems(read("README.md"), changed)
    assert any("headline metric test_accuracy = 0.83" in p for p in readme), readme
