"""Scores a `diacritics_cs` tagger on each source's held-out documents.

Each held-out line is stripped of its marks and restored as a user gets it
(`SequenceTagger.restore_diacritics`, line by line). A word is a run of
letters and digits (`\\w+`) of the reference; since restoring keeps every
character in place, the restored text's same span is compared with it.
Word accuracy is reported over all words and over the words whose correct
form carries a mark, beside the lexicon baseline: each word's most frequent
marked form in the training text (case carried over letter by letter; a
word never seen is left as typed).
"""

import collections
import re
import time

import keras

from keras_rnnattn.text import strip_diacritics

WORD_RE = re.compile(r"\w+")
# Everyday lines typed without marks, outside the corpus, pinned by the tests.
PROBE_TEXTS = [
    "Zitra rano pojedu do Brna",
    "kdy prijdes domu",
    "Dekuji za zpravu, ozvu se vecer.",
    "mam hlad, dame si pizzu?",
    "Prosim poslete mi fakturu do patku",
    "jak se mas",
    "To je uplne jedno",
    "Stastny novy rok a hodne zdravi!",
]


def held_out_lines(documents):
    """The non-empty lines of the documents, in order."""
    return [line for doc in documents for line in doc.split("\n") if line.strip()]


class _Lexicon:
    """Each lowercase word without marks → its most frequent marked form."""

    def __init__(self, texts):
        counts = collections.defaultdict(collections.Counter)
        for text in texts:
            for word in WORD_RE.findall(text):
                lower = word.lower()
                counts[strip_diacritics(lower)][lower] += 1
        self.forms = {key: c.most_common(1)[0][0] for key, c in counts.items()}

    def restore(self, text):
        def replace(match):
            word = match.group(0)
            form = self.forms.get(word.lower())
            if form is None or len(form) != len(word):
                return word
            return "".join(f.upper() if w.isupper() else f for w, f in zip(word, form))

        return WORD_RE.sub(replace, text)


def lexicon_baseline(train_texts):
    """A function restoring one text with the lexicon of `train_texts`."""
    return _Lexicon(train_texts).restore


def word_scores(restored, references):
    """Word accuracy (%) over all words and over words with marks.

    Args:
        restored: list of str, one per reference, the same lengths.
        references: list of str.

    Returns:
        dict: `word_accuracy`, `marked_word_accuracy`, `words`,
        `marked_words`, `unmarked_words_changed` (words without marks given
        one).
    """
    right = total = marked = marked_right = changed = 0
    for out, ref in zip(restored, references):
        for match in WORD_RE.finditer(ref):
            word, got = match.group(0), out[match.start() : match.end()]
            total += 1
            right += got == word
            if strip_diacritics(word) != word:
                marked += 1
                marked_right += got == word
            elif got != word:
                changed += 1
    return {
        "word_accuracy": round(100.0 * right / max(1, total), 2),
        "marked_word_accuracy": round(100.0 * marked_right / max(1, marked), 2),
        "words": total,
        "marked_words": marked,
        "unmarked_words_changed": changed,
    }


def score_sources(restore, split_data):
    """`{source or "all": word_scores}` of `restore` (a list of texts → list)."""
    out, every_out, every_ref = {}, [], []
    for name, documents in split_data.items():
        references = held_out_lines(documents)
        restored = restore([strip_diacritics(line) for line in references])
        out[name] = word_scores(restored, references)
        every_out += restored
        every_ref += references
    out["all"] = word_scores(every_out, every_ref)
    return out


def describe(args):
    attention = (
        "no attention (each tag from the BiLSTM state alone)"
        if args.attention == "none"
        else f"self-attention over the BiLSTM states ({args.attention})"
    )
    return (
        "Czech diacritics restoration: text typed without marks in, the same "
        "text with its marks out (only marks on letters are added; every "
        "other character, space and capital is kept). One tag per character "
        "(the marks its letter takes, or none), character embeddings "
        f"{args.embedding_dim}, BiLSTM ({args.units} per direction), "
        f"{attention}, dropout {args.dropout}"
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + f"; windows of at most {args.window} characters cut at spaces."
    )


def metadata(model, args, data, metrics, command):
    """The preset's metadata: scores per source beside the lexicon, probes."""
    lexicon = lexicon_baseline([d for docs in data["train"].values() for d in docs])
    start = time.time()
    test = score_sources(model.restore_diacritics, data["test"])
    seconds = time.time() - start
    metrics["test"] = test
    metrics["test_word_accuracy"] = test["all"]["word_accuracy"]
    metrics["test_marked_word_accuracy"] = test["all"]["marked_word_accuracy"]
    metrics["test_words_per_second"] = round(test["all"]["words"] / seconds, 1)
    metrics["validation"] = score_sources(model.restore_diacritics, data["validation"])
    metrics.setdefault("peers", {})["lexicon"] = {
        "test": score_sources(lambda ts: [lexicon(t) for t in ts], data["test"])
    }
    sources = {
        name: {split: len(data[split][name]) for split in data} for name in data["test"]
    }
    # The first held-out lines of each source, as the tests read them again.
    slice_texts = [
        line for docs in data["test"].values() for line in held_out_lines(docs)[:10]
    ]
    return {
        "description": describe(args),
        "data": "Czech text of two Debian packages, each split by document (5% "
        "test, 5% validation; keras_rnnattn.datasets.split_documents): "
        "fortunes_cs (everyday sayings, jokes and dialogue; fortunes-cs, GPL) "
        "and libreoffice_help_cs (help pages; libreoffice-help-cs, MPL-2.0).",
        "sources": sources,
        "data_license": "fortunes_cs: GPL; libreoffice_help_cs: MPL-2.0",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "window": args.window,
        "metric_notes": "word accuracy (%) of each source's held-out lines, "
        "stripped of their marks and restored one line at a time; words are "
        "\\w+ runs of the reference; 'marked': the words whose correct form "
        "carries a mark; lexicon: each word's most frequent marked form in the "
        "training text",
        "probe_texts": PROBE_TEXTS,
        "probe_restored": model.restore_diacritics(PROBE_TEXTS),
        "test_slice_texts": slice_texts,
        "test_slice_restored": model.restore_diacritics(
            [strip_diacritics(t) for t in slice_texts]
        ),
    }


def report(metadata):
    metrics = metadata["metrics"]
    lexicon = metrics["peers"]["lexicon"]["test"]
    print(
        "| source | words | word accuracy | marked words | lexicon | lexicon marked |"
    )
    print("|---|---|---|---|---|---|")
    for name, s in metrics["test"].items():
        lex = lexicon[name]
        print(
            f"| {name} | {s['words']:,} | {s['word_accuracy']:.2f} | "
            f"{s['marked_word_accuracy']:.2f} | {lex['word_accuracy']:.2f} | "
            f"{lex['marked_word_accuracy']:.2f} |"
        )
    for text, out in zip(metadata["probe_texts"], metadata["probe_restored"]):
        print(f"  {text}\n    -> {out}")
