"""How many of the training text's sentences are questions, per source and split.

A sentence ends at a word tagged PERIOD (`.`, `!`, `;`, `…`) or QUESTION
(`?`) by `keras_rnnattn.text.punctuation_tags`; its share of questions is the
share of those sentence-final tags that are QUESTION. Counted on
`corpus.tagged_splits`, so the training split is capped at
`corpus.MAX_TRAIN_WORDS` words a source as training sees it. The totals:
before (the sources of the shipped preset) and after (all of `corpus.SOURCES`).

Usage:

    python applications/punctuation_en/question_share.py [--sources a,b]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.punctuation_en import corpus  # noqa: E402

SPLITS = ("train", "validation", "test")
# The sources added for questions (issue #92); the others trained the preset.
NEW_SOURCES = ("chatterbot", "debian_faq")


def sentence_counts(tags):
    """`(sentences, questions)`: the sentence-final tags, and the QUESTION ones.

    Example:

    >>> sentence_counts(["title_O", "lower_PERIOD", "title_QUESTION", "lower_O"])
    (2, 1)
    """
    questions = sum(t.endswith("_QUESTION") for t in tags)
    return sum(t.endswith("_PERIOD") for t in tags) + questions, questions


def share(sentences, questions):
    return f"{100 * questions / sentences:5.1f}%" if sentences else "    -"


def table(data, names):
    """The rows of the table: per source, then the totals before and after."""
    counts = {
        (name, split): sentence_counts(data[split][name][1])
        for split in SPLITS
        for name in names
    }
    header = f"{'source':<18}" + "".join(f"{s:>22}" for s in SPLITS)
    rows = [header, f"{'':<18}" + f"{'sentences':>10} {'questions':>11}" * 3]

    def row(label, chosen):
        cells = []
        for split in SPLITS:
            n = sum(counts[name, split][0] for name in chosen)
            q = sum(counts[name, split][1] for name in chosen)
            cells.append(f"{n:>10,} {share(n, q):>11}")
        return f"{label:<18}" + "".join(cells)

    rows += [row(name, [name]) for name in names]
    old = [n for n in names if n not in NEW_SOURCES]
    rows += ["", row("before (old)", old), row("after (all)", names)]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sources",
        default=",".join(corpus.SOURCES),
        help="comma-separated names of corpus.SOURCES (default: all)",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.sources.split(",") if n]
    unknown = [n for n in names if n not in corpus.SOURCES]
    if unknown:
        parser.error(f"unknown sources {unknown}: expected {sorted(corpus.SOURCES)}")
    data = corpus.tagged_splits(names)
    print(
        f"Sentences and their share of questions (train capped at "
        f"{corpus.MAX_TRAIN_WORDS:,} words a source)"
    )
    for line in table(data, names):
        print(line)


if __name__ == "__main__":
    main()
