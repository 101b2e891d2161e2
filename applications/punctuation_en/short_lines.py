"""Scores a punctuation tagger on short lines, as a speech recogniser emits them.

The lines are the sentences of 3 to 15 words of each source's held-out
documents (`corpus.tagged_source`: one split of one source as words and
tags, cut after each full stop or question mark), lowercased without
punctuation, and restored one line at a time with `restore_punctuation`. A
line is exactly right when the restored text equals the reference (marks
and capitals, `keras_rnnattn.text.restore_punctuation` of the true tags);
the marks are scored per class with `punctuation_scores`.

    python applications/punctuation_en/short_lines.py --preset punctuation_en
    python applications/punctuation_en/short_lines.py --preset saved_models/punctuation_en \\
        --split test --into saved_models/punctuation_en
"""

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.punctuation_en import corpus  # noqa: E402
from keras_rnnattn.metrics import punctuation_scores  # noqa: E402
from keras_rnnattn.text import punctuation_tags, restore_punctuation  # noqa: E402

MIN_WORDS, MAX_WORDS = 3, 15


def sentence_lines(words, tags, min_words=MIN_WORDS, max_words=MAX_WORDS):
    """The sentences of `min_words` to `max_words` words: `[(words, tags)]`."""
    out, start = [], 0
    for i, tag in enumerate(tags):
        if tag.endswith(("_PERIOD", "_QUESTION")) or i == len(tags) - 1:
            if min_words <= i + 1 - start <= max_words:
                out.append((words[start : i + 1], tags[start : i + 1]))
            start = i + 1
    return out


def score_lines(restore, lines):
    """`restore` (a list of texts to a list of texts) on `lines`: the share
    exactly right, and per-class scores of the marks and capitals."""
    inputs = [" ".join(words) for words, _ in lines]
    restored = restore(inputs)
    exact, predicted, true = 0, [], []
    for (words, tags), out in zip(lines, restored):
        exact += out == restore_punctuation(words, tags)
        got_words, got_tags = punctuation_tags(out)
        if got_words != words:  # never expected: the words are kept
            got_tags = ["lower_O"] * len(words)
        predicted.append(got_tags)
        true.append(tags)
    scores = punctuation_scores(predicted, true)
    return {
        "lines": len(lines),
        "exact": round(100.0 * exact / max(1, len(lines)), 2),
        "questions": sum(t[-1].endswith("QUESTION") for _, t in lines),
        **{
            name: {k: round(v, 2) for k, v in scores[name].items()}
            for name in ("QUESTION", "PERIOD", "COMMA", "overall")
        },
    }


def short_line_scores(restore, split="validation", names=tuple(corpus.SOURCES)):
    """`{source or "all": score_lines}` on the short lines of one split."""
    out, every = {}, []
    for name in names:
        lines = sentence_lines(*corpus.tagged_source(name, split))
        out[name] = score_lines(restore, lines)
        every += lines
    out["all"] = score_lines(restore, every)
    return out


def tune(tagger, split="validation"):
    """Exact % and question F1 of `utterance_tags`'s settings on the short
    lines of `split` (all sources): `{(keep_inside, question): scores}`."""
    from keras_rnnattn.models._punctuation_windows import tag_word_lists
    from keras_rnnattn.models.punctuation_utterances import utterance_tags

    lines = [
        line
        for name in corpus.SOURCES
        for line in sentence_lines(*corpus.tagged_source(name, split))
    ]
    tags, marks = tag_word_lists(tagger, [w for w, _ in lines], 64, with_marks=True)
    out = {}
    for keep in (0.5, 0.8, 0.9, 0.95, 0.99):
        for question in (0.1, 0.2, 0.3, 0.4, 0.5):
            restored = [
                restore_punctuation(words, utterance_tags(t, m, keep, question))
                for (words, _), t, m in zip(lines, tags, marks)
            ]
            scores = score_lines(lambda texts, r=restored: r, lines)
            out[keep, question] = scores
            print(
                f"keep_inside {keep} question {question}: exact "
                f"{scores['exact']:.1f}, question F1 {scores['QUESTION']['f1']:.1f}, "
                f"overall F1 {scores['overall']['f1']:.1f}",
                flush=True,
            )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="punctuation_en")
    parser.add_argument("--split", default="validation", choices=("validation", "test"))
    parser.add_argument("--into", help="a preset folder: metrics `short_lines`")
    parser.add_argument(
        "--tune", action="store_true", help="score the utterance settings' grid"
    )
    args = parser.parse_args(argv)
    from keras_rnnattn.models import SequenceTagger

    tagger = SequenceTagger.from_preset(args.preset)
    if args.tune:
        tune(tagger, args.split)
        return 0
    scores = short_line_scores(tagger.restore_punctuation, args.split)
    print("| source | lines | exact % | question P / R / F1 | overall F1 |")
    print("|---|---|---|---|---|")
    for name, s in scores.items():
        q = s["QUESTION"]
        print(
            f"| {name} | {s['lines']:,} | {s['exact']:.1f} | {q['precision']:.1f} / "
            f"{q['recall']:.1f} / {q['f1']:.1f} | {s['overall']['f1']:.1f} |"
        )
    if args.into:
        from keras_rnnattn.training.metadata import update_metadata

        key = "short_lines" if args.split == "test" else "validation_short_lines"
        update_metadata(args.into, {key: scores})
        print(json.dumps({key: scores["all"]["exact"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
