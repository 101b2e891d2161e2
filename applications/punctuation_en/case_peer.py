"""Case accuracy of `punctuation_en` at sentence starts and elsewhere, beside
the `truecase` package (a statistical truecaser that ships its model).

Both read the same held-out words of each source, lowercased. The tagger
restores them as a user gets them (`evaluation.restored_tags`: windows and
sentence rules). `truecase` (`TrueCaser.get_true_case_from_tokens`, unknown
words left as they are) is given each true sentence on its own, so it knows
where sentences start; its sentence-start accuracy is that of its first-token
rule, and the telling number is the other capitalised words (names, titles,
acronyms).

Scores (% of words whose case class, lower, title or upper, is right):
`sentence_starts` (the first word of each true sentence),
`other_capitalised` (title or upper words elsewhere), `lower_kept` (the
words that are lowercase in the reference) and `all`.

    pip install truecase
    python applications/punctuation_en/case_peer.py --preset saved_models/punctuation_en \\
        --into saved_models/punctuation_en
"""

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.punctuation_en import corpus, evaluation  # noqa: E402

# The sources the shipped preset was scored on (its card's columns).
PRESET_SOURCES = (
    "python_docs", "libreoffice_help", "fortunes", "lee_news", "nyt_editorials",
    "movie_reviews", "bible",
)  # fmt: skip


def sentence_starts(true_tags):
    """Whether each word starts a sentence of the reference."""
    out, start = [], True
    for tag in true_tags:
        out.append(start)
        start = tag.endswith(("_PERIOD", "_QUESTION"))
    return out


def case_breakdown(predicted, true):
    """The case accuracy (%) of `predicted` tags at sentence starts, on the
    other capitalised words, on the lowercase words and on all words."""
    groups = {"sentence_starts": [], "other_capitalised": [], "lower_kept": []}
    for got, want, first in zip(predicted, true, sentence_starts(true)):
        right = got.split("_")[0] == want.split("_")[0]
        if first:
            groups["sentence_starts"].append(right)
        elif not want.startswith("lower"):
            groups["other_capitalised"].append(right)
        else:
            groups["lower_kept"].append(right)
    every = [r for g in groups.values() for r in g]
    out = {k: round(100.0 * sum(v) / max(1, len(v)), 2) for k, v in groups.items()}
    out["all"] = round(100.0 * sum(every) / max(1, len(every)), 2)
    out.update({f"{k}_words": len(v) for k, v in groups.items()})
    return out


def case_class(token):
    if token.isupper() and len(token) > 1:
        return "upper"
    return "title" if token[:1].isupper() else "lower"


def truecase_tags(caser, words, true_tags):
    """Tags whose case is `truecase`'s, each true sentence cased on its own."""
    out, sentence = [], []
    for word, ends in zip(words, sentence_starts(true_tags)[1:] + [True]):
        sentence.append(word)
        if ends:
            cased = caser.get_true_case_from_tokens(sentence, "as-is")
            out += [f"{case_class(t)}_O" for t in cased]
            sentence = []
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="saved_models/punctuation_en")
    parser.add_argument("--into", help="a preset folder: metrics `case`")
    args = parser.parse_args(argv)
    from truecase.TrueCaser import TrueCaser

    from keras_rnnattn.models import SequenceTagger

    tagger = SequenceTagger.from_preset(args.preset)
    caser = TrueCaser()
    scores = {"preset": {}, "truecase": {}}
    every = {"preset": [], "truecase": [], "true": []}
    for name in PRESET_SOURCES:
        words, true = corpus.tagged_source(name, "test")
        predicted = evaluation.restored_tags(tagger, words)
        cased = truecase_tags(caser, words, true)
        scores["preset"][name] = case_breakdown(predicted, true)
        scores["truecase"][name] = case_breakdown(cased, true)
        every["preset"] += predicted
        every["truecase"] += cased
        every["true"] += true
    for system in ("preset", "truecase"):
        scores[system]["all"] = case_breakdown(every[system], every["true"])
    print(
        "| system | source | sentence starts | other capitalised | lower kept | all |"
    )
    print("|---|---|---|---|---|---|")
    for system, by_source in scores.items():
        for name, s in by_source.items():
            print(
                f"| {system} | {name} | {s['sentence_starts']:.1f} | "
                f"{s['other_capitalised']:.1f} | {s['lower_kept']:.1f} | {s['all']:.1f} |"
            )
    if args.into:
        from keras_rnnattn.training.metadata import update_metadata

        update_metadata(
            args.into,
            {"case": scores["preset"], "peers": {"truecase": scores["truecase"]}},
        )
        print(json.dumps({"case": scores["preset"]["all"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
