"""Scores a `punctuation_en` tagger on each source's held-out documents.

The test text of each source is restored as a user gets it: the words in
overlapping windows, each word decided by the window where it is central
(`PunctuationStream.word_tags`), then the sentence rules of
`restore_punctuation` (a capital after each sentence end). Scores are
`keras_rnnattn.metrics.punctuation_scores` per source and over all sources,
with the capitalisation accuracy (the share of words whose case is right).
"""

import time

import keras

from applications.punctuation_en import corpus
from keras_rnnattn.metrics import punctuation_scores
from keras_rnnattn.models.punctuation_stream import PunctuationStream, sentence_tags

CLASSES = ("COMMA", "PERIOD", "QUESTION", "overall")
# Sentences of kinds the training text has little of, pinned by the tests.
PROBE_TEXTS = [
    "to reset your password open the settings page and choose the security "
    "tab enter your old password and then the new one twice",
    "hi sarah thanks for sending the slides so quickly i read them on the "
    "train this morning can we talk about the budget on friday",
    "the city council voted on tuesday to expand the bike lanes along main "
    "street despite objections from local shop owners",
    "in the beginning god created the heavens and the earth",
    "where are you going he asked and she said to the city of david",
]


def case_accuracy(predicted, true):
    """The percentage of words whose case (`lower`, `title`, `upper`) is right."""
    right = sum(p.split("_")[0] == t.split("_")[0] for p, t in zip(predicted, true))
    return 100.0 * right / max(1, len(true))


def restored_tags(model, words, batch_size=64):
    """The tags a user gets for running text: central windows, sentence rules."""
    raw = PunctuationStream(model).word_tags(words, batch_size=batch_size)
    return sentence_tags(raw, True, False)[0]


def rounded(scores):
    return {
        name: {k: round(v, 2) if isinstance(v, float) else v for k, v in s.items()}
        for name, s in scores.items()
    }


def score_sources(model, split_data):
    """`{source or "all": scores}` of `model` on `{source: (words, tags)}`."""
    out, every_predicted, every_true = {}, [], []
    for name, (words, true) in split_data.items():
        predicted = restored_tags(model, words)
        scores = rounded(punctuation_scores(predicted, true))
        scores["case_accuracy"] = round(case_accuracy(predicted, true), 2)
        scores["words"] = len(words)
        out[name] = scores
        every_predicted += predicted
        every_true += true
    scores = rounded(punctuation_scores(every_predicted, every_true))
    scores["case_accuracy"] = round(case_accuracy(every_predicted, every_true), 2)
    scores["words"] = len(every_true)
    out["all"] = scores
    return out


def score_table(by_source):
    """A Markdown table: F1 per class and case accuracy, one row per source."""
    lines = [
        "| source | words | COMMA F1 | PERIOD F1 | QUESTION F1 | overall P / R / F1 "
        "| case accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in by_source.items():
        o = s["overall"]
        lines.append(
            f"| {name} | {s['words']:,} | {s['COMMA']['f1']:.1f} | "
            f"{s['PERIOD']['f1']:.1f} | {s['QUESTION']['f1']:.1f} | "
            f"{o['precision']:.1f} / {o['recall']:.1f} / {o['f1']:.1f} | "
            f"{s['case_accuracy']:.1f} |"
        )
    return "\n".join(lines)


def describe(args):
    attention = (
        "no attention (each tag from the BiGRU state alone)"
        if args.attention == "none"
        else f"self-attention over the BiGRU states ({args.attention})"
    )
    return (
        "English punctuation and capitalisation restoration for text of any "
        "kind: lowercase words without punctuation in (what speech recognisers "
        "emit), each word's following mark (comma, full stop, question mark or "
        "none) and case out (PUNCTUATION_TAGS). SentencePiece subwords "
        f"({args.vocabulary_size:,}, lowercase; each word encoded on its own, "
        "its first piece tagged with its case and its last with its mark), "
        f"embeddings {args.embedding_dim}, BiGRU ({args.units} per direction), "
        f"{attention}, dropout {args.dropout}"
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + f"; windows of {args.window} words, each word decided by the window "
        "where it is central."
    )


def metadata(model, args, data, metrics, command):
    """The preset's metadata: scores per source, probes, pinned outputs."""
    start = time.time()
    test = score_sources(model, data["test"])
    seconds = time.time() - start
    metrics["test"] = test
    metrics["test_overall_f1"] = test["all"]["overall"]["f1"]
    metrics["test_question_f1"] = test["all"]["QUESTION"]["f1"]
    metrics["test_words"] = test["all"]["words"]
    metrics["test_words_per_second"] = round(test["all"]["words"] / seconds, 1)
    validation = score_sources(model, data["validation"])
    metrics["validation_overall_f1"] = validation["all"]["overall"]["f1"]
    sources = {
        name: {
            "what": what,
            "license": license_,
            **{split: len(data[split][name][0]) for split in data},
        }
        for name, (_, what, license_) in corpus.SOURCES.items()
        if name in data["test"]
    }
    lee = data["test"].get("lee_news", next(iter(data["test"].values())))[0]
    slices = [" ".join(lee[i : i + 40]) for i in range(0, min(len(lee), 400), 40)]
    return {
        "description": describe(args),
        "data": f"{len(sources)} sources of English, each split by document "
        "(5% test, 5% validation; keras_rnnattn.datasets.split_documents or the "
        f"loader's canonical split), at most {args.max_train_words:,} training words a "
        "source: "
        + "; ".join(
            f"{name} ({s['what']}; {s['license']}): {s['train']:,} training, "
            f"{s['test']:,} test words"
            for name, s in sources.items()
        ),
        "sources": sources,
        "data_license": "; ".join(f"{n}: {s['license']}" for n, s in sources.items()),
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "window": args.window,
        "metric_notes": "per-class precision, recall and F1 (%) of the mark after "
        "each word, and the share of words whose case is right, on each source's "
        "held-out documents read as running text with PunctuationStream's central "
        "windows and the sentence rules; overall: micro average over COMMA, "
        "PERIOD and QUESTION (keras_rnnattn.metrics.punctuation_scores); "
        "'all': every source's test words together",
        "probe_texts": PROBE_TEXTS,
        "probe_restored": model.restore_punctuation(PROBE_TEXTS),
        "test_slice_texts": slices,
        "test_slice_restored": model.restore_punctuation(slices),
    }


def report(model, metadata):
    print(score_table(metadata["metrics"]["test"]))
    for text, restored in zip(metadata["probe_texts"], metadata["probe_restored"]):
        print(f"  {text}\n    -> {restored}")
