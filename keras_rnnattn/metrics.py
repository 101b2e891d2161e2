"""Corpus BLEU and chrF (through sacrebleu) with their sacrebleu signatures, and
exact match, on detokenized text; word and token error rates of sequences of
space-separated tokens (phonemes, tags); per-class F1 of punctuation and case
tags; BLEU by source length and the beam
length penalty that scores best."""

# Buckets of source length in words of Bahdanau et al. (2014), Fig. 2.
LENGTH_BUCKETS = ((1, 5), (6, 8), (9, 12), (13, 20), (21, 200))
# GNMT α values tried by `pick_length_penalty` (Wu et al. 2016 found 0.6-1.0).
LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.2, 1.4)


def _sacrebleu():
    try:
        import sacrebleu
    except ImportError as error:
        raise ImportError(
            "BLEU and chrF need sacrebleu: pip install sacrebleu "
            "(or pip install 'keras-rnnattn[data]')."
        ) from error
    return sacrebleu


def _check(hypotheses, references, owner):
    """Hypotheses as a list of str, references as a list of lists of str."""
    for name, value in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(value, str):
            raise ValueError(
                f"{owner}: `{name}` must be a list of texts, not one str: wrap it "
                f"in a list. Received: {name}={value[:50]!r}"
            )
    hypotheses = list(hypotheses)
    references = list(references)
    if not hypotheses:
        raise ValueError(f"{owner}: received no hypotheses (an empty list).")
    if len(references) != len(hypotheses):
        raise ValueError(
            f"{owner}: give one reference (or one list of references) per "
            f"hypothesis. Received: {len(hypotheses)} hypotheses and "
            f"{len(references)} references"
        )
    refs = []
    for i, ref in enumerate(references):
        ref = [ref] if isinstance(ref, str) else list(ref)
        if not ref or not all(isinstance(r, str) for r in ref):
            raise ValueError(
                f"{owner}: each reference must be a str or a non-empty list of str. "
                f"Received: references[{i}]={ref!r}"
            )
        refs.append(ref)
    for i, hyp in enumerate(hypotheses):
        if not isinstance(hyp, str):
            raise ValueError(
                f"{owner}: each hypothesis must be a str. "
                f"Received: hypotheses[{i}]={hyp!r}"
            )
    return hypotheses, refs


def _streams(references):
    """Per-hypothesis reference lists as sacrebleu's reference streams (None pads)."""
    count = max(len(ref) for ref in references)
    return [
        [ref[j] if j < len(ref) else None for ref in references] for j in range(count)
    ]


def _bleu_metric(lowercase, tokenize):
    """The sacrebleu BLEU that `bleu` scores with and `bleu_signature` describes."""
    return _sacrebleu().metrics.BLEU(lowercase=lowercase, tokenize=tokenize)


def _chrf_metric(char_order, word_order, beta):
    """The sacrebleu chrF that `chrf` scores with and `chrf_signature` describes."""
    return _sacrebleu().metrics.CHRF(
        char_order=char_order, word_order=word_order, beta=beta
    )


def _signature(metric, num_references, owner):
    if (
        not isinstance(num_references, int)
        or isinstance(num_references, bool)
        or num_references < 1
    ):
        raise ValueError(
            f"{owner}: `num_references` must be an int >= 1, the number of "
            f"references per hypothesis. Received: num_references={num_references!r}"
        )
    # sacrebleu records the number of references when it scores: score one line.
    metric.corpus_score(["a"], [["a"]] * num_references)
    return str(metric.get_signature())


def bleu(hypotheses, references, lowercase=False, tokenize="13a"):
    """Corpus BLEU (Papineni et al. 2002) as sacrebleu computes it.

    Give detokenized text (what a model outputs for people to read): sacrebleu
    tokenizes it itself, so scores compare across papers. Cased by default.
    Corpus-level: n-gram counts are summed over all sentences before the
    precisions are taken, so a corpus without any 4-gram scores 0.

    Args:
        hypotheses: list of str, the system outputs.
        references: list with, per hypothesis, one reference str or a list of
            reference strs.
        lowercase: bool, compare lowercased text.
        tokenize: sacrebleu's tokenizer name (`"13a"`, `"intl"`, `"char"`,
            `"none"`...).

    Returns:
        float, BLEU in [0, 100].

    Example:

    >>> round(bleu(["the cat sat on the mat"], ["the cat sat on a mat"]), 2)
    53.73
    """
    hypotheses, references = _check(hypotheses, references, "bleu")
    metric = _bleu_metric(lowercase, tokenize)
    return float(metric.corpus_score(hypotheses, _streams(references)).score)


def bleu_signature(lowercase=False, tokenize="13a", num_references=1):
    """sacrebleu's signature of the BLEU that `bleu` computes with these arguments.

    The string papers quote beside a BLEU score so that it can be compared:
    the number of references, case, tokenizer, smoothing and sacrebleu's
    version. Recipes record it in a translation preset's metadata.json and
    its model card.

    Args:
        lowercase: bool, as for `bleu`.
        tokenize: str, sacrebleu's tokenizer name, as for `bleu`.
        num_references: int, the number of references per hypothesis.

    Returns:
        str, e.g. `"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"`.

    Example:

    >>> bleu_signature().split("|")[:5]
    ['nrefs:1', 'case:mixed', 'eff:no', 'tok:13a', 'smooth:exp']
    """
    return _signature(
        _bleu_metric(lowercase, tokenize), num_references, "bleu_signature"
    )


def chrf(hypotheses, references, char_order=6, word_order=0, beta=2):
    """Corpus chrF (Popović 2015) as sacrebleu computes it.

    Character n-gram F-score, n = 1..`char_order`, whitespace removed,
    recall weighted `beta` times as much as precision. `word_order=2` is chrF++.
    Cased; give detokenized text.

    Args:
        hypotheses: list of str, the system outputs.
        references: list with, per hypothesis, one reference str or a list of
            reference strs.
        char_order: int, the longest character n-gram.
        word_order: int, the longest word n-gram (0 for chrF, 2 for chrF++).
        beta: int, the weight of recall.

    Returns:
        float, chrF in [0, 100].

    Example:

    >>> chrf(["Das Kind schläft."], ["Das Kind schläft."])
    100.0
    """
    hypotheses, references = _check(hypotheses, references, "chrf")
    metric = _chrf_metric(char_order, word_order, beta)
    return float(metric.corpus_score(hypotheses, _streams(references)).score)


def chrf_signature(char_order=6, word_order=0, beta=2, num_references=1):
    """sacrebleu's signature of the chrF that `chrf` computes with these arguments.

    Args:
        char_order: int, as for `chrf`.
        word_order: int, as for `chrf` (2 for chrF++).
        beta: int, as for `chrf`.
        num_references: int, the number of references per hypothesis.

    Returns:
        str, e.g. `"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"`.

    Example:

    >>> chrf_signature(word_order=2).split("|")[:5]
    ['nrefs:1', 'case:mixed', 'eff:yes', 'nc:6', 'nw:2']
    """
    return _signature(
        _chrf_metric(char_order, word_order, beta), num_references, "chrf_signature"
    )


def exact_match(hypotheses, references):
    """The percentage of hypotheses equal to (one of) their references.

    Strings are compared as they are (case, spacing and punctuation count);
    normalise both sides first (e.g. with `keras_rnnattn.text.normalize`) for a
    looser match.

    Args:
        hypotheses: list of str.
        references: list with, per hypothesis, one reference str or a list of
            accepted strs.

    Returns:
        float in [0, 100], on the same scale as `bleu` and `chrf`.

    Example:

    >>> exact_match(["a cat", "a dog"], ["a cat", ["the dog", "a Dog"]])
    50.0
    """
    hypotheses, references = _check(hypotheses, references, "exact_match")
    hits = sum(hyp in refs for hyp, refs in zip(hypotheses, references))
    return 100.0 * hits / len(hypotheses)


def _edit_distance(a, b):
    """Levenshtein distance between two token lists (unit costs)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            )
        previous = current
    return previous[-1]


def word_error_rate(hypotheses, references):
    """The percentage of sequences that match none of their references.

    The word error rate of grapheme-to-phoneme conversion (Yao & Zweig 2015;
    Bisani & Ney 2008): a word is wrong unless its predicted phonemes equal
    one of its accepted pronunciations. Tokens are compared after splitting
    on white space, so spacing does not count.

    Args:
        hypotheses: list of str, space-separated tokens.
        references: list with, per hypothesis, one reference str or a list of
            accepted strs.

    Returns:
        float in [0, 100].

    Example:

    >>> word_error_rate(["R EH1 D", "K AE1 T"], [["R IY1 D", "R EH1 D"], "K AH1 T"])
    50.0
    """
    hypotheses, references = _check(hypotheses, references, "word_error_rate")
    wrong = sum(
        hyp.split() not in [ref.split() for ref in refs]
        for hyp, refs in zip(hypotheses, references)
    )
    return 100.0 * wrong / len(hypotheses)


def phoneme_error_rate(hypotheses, references):
    """Edit distance over reference length, in tokens, against the closest reference.

    The phoneme error rate of grapheme-to-phoneme conversion: the total
    Levenshtein distance (substitutions, insertions and deletions of
    space-separated tokens) between each hypothesis and the reference closest
    to it, divided by the total length of those references. Applies to any
    token sequences (phonemes, tags).

    Args:
        hypotheses: list of str, space-separated tokens.
        references: list with, per hypothesis, one reference str or a list of
            accepted strs.

    Returns:
        float, a percentage (above 100 when hypotheses are much too long).

    Example:

    >>> phoneme_error_rate(["K AE1 T S", "D AO1 G"], ["K AE1 T", "D AO1 G"])
    16.666666666666668
    """
    hypotheses, references = _check(hypotheses, references, "phoneme_error_rate")
    errors = length = 0
    for hyp, refs in zip(hypotheses, references):
        hyp = hyp.split()
        best = min(
            ((_edit_distance(hyp, ref.split()), len(ref.split())) for ref in refs),
            key=lambda pair: (pair[0], -pair[1]),
        )
        errors += best[0]
        length += best[1]
    if length == 0:
        raise ValueError(
            "phoneme_error_rate: every reference is empty, so the rate is "
            "undefined: give references with at least one token."
        )
    return 100.0 * errors / length


def _f1(true_positives, predicted, actual):
    precision = 100.0 * true_positives / predicted if predicted else 0.0
    recall = 100.0 * true_positives / actual if actual else 0.0
    total = precision + recall
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / total if total else 0.0,
        "support": actual,
    }


def punctuation_scores(predicted_tags, true_tags):
    """Per-class precision, recall and F1 of punctuation and capitalisation tags.

    The scores of Tilk & Alumäe (2016) for `keras_rnnattn.text.PUNCTUATION_TAGS`
    (`<case>_<punctuation>`, one per word): for each punctuation class
    (COMMA, PERIOD, QUESTION) a word counts as a true positive when both tags
    have that class; `"overall"` is the micro average over the three classes
    (a mark of the wrong class is a false positive and a false negative). The
    case is scored alike: `"title"`, `"upper"` and `"case_overall"` over both.

    Args:
        predicted_tags: the predicted tags, a list of str or a list of lists
            of str (one list per text).
        true_tags: the true tags, in the same shape.

    Returns:
        dict from `"COMMA"`, `"PERIOD"`, `"QUESTION"`, `"overall"`, `"title"`,
        `"upper"` and `"case_overall"` to dicts with `"precision"`,
        `"recall"`, `"f1"` (percentages) and `"support"` (true count).

    Example:

    >>> scores = punctuation_scores(
    ...     ["title_COMMA", "lower_PERIOD", "lower_O"],
    ...     ["title_COMMA", "lower_O", "lower_PERIOD"])
    >>> scores["COMMA"]["f1"], scores["overall"]["f1"]
    (100.0, 50.0)
    """
    flat = []
    for name, tags in (("predicted_tags", predicted_tags), ("true_tags", true_tags)):
        if isinstance(tags, str):
            raise ValueError(
                f"punctuation_scores: `{name}` must be a list of tags, not one str."
            )
        flat.append(
            [t for row in tags for t in ([row] if isinstance(row, str) else row)]
        )
    predicted, true = flat
    if len(predicted) != len(true):
        raise ValueError(
            "punctuation_scores: give one predicted tag per true tag. Received: "
            f"{len(predicted)} predicted and {len(true)} true tags"
        )
    bad = sorted({t for t in predicted + true if t.count("_") != 1})
    if bad:
        raise ValueError(
            "punctuation_scores: tags must be `<case>_<punctuation>` "
            f"(PUNCTUATION_TAGS). Received: {bad[:5]}"
        )
    pairs = [(p.split("_"), t.split("_")) for p, t in zip(predicted, true)]
    scores = {}
    groups = (
        ("overall", 1, ("COMMA", "PERIOD", "QUESTION")),
        ("case_overall", 0, ("title", "upper")),
    )
    for overall, part, classes in groups:
        totals = [0, 0, 0]
        for name in classes:
            counts = [
                sum(p[part] == name and t[part] == name for p, t in pairs),
                sum(p[part] == name for p, _ in pairs),
                sum(t[part] == name for _, t in pairs),
            ]
            scores[name] = _f1(*counts)
            totals = [a + b for a, b in zip(totals, counts)]
        scores[overall] = _f1(*totals)
    return scores


def bleu_by_length(hypotheses, references, sources, buckets=LENGTH_BUCKETS):
    """Corpus BLEU and chrF per bucket of source length (Bahdanau et al. 2014, Fig. 2).

    Each source's length is its number of words (split on white space); the
    hypotheses whose source length falls in a bucket `(low, high)` (both
    included) are scored together, against their references, with `bleu` and
    `chrf`. Buckets without a sentence are left out; so are sentences in no
    bucket.

    Args:
        hypotheses: list of str, the system outputs.
        references: list with, per hypothesis, one reference str or a list of
            reference strs.
        sources: list of str, the source text of each hypothesis.
        buckets: sequence of `(low, high)` int pairs, the word counts of each
            bucket. Defaults to `LENGTH_BUCKETS`, those of Bahdanau et al.

    Returns:
        dict `{"low-high": {"sentences": n, "bleu": float, "chrf": float}}`,
        in the order of `buckets`.

    Example:

    >>> table = bleu_by_length(
    ...     ["the cat sat on the mat", "a dog"],
    ...     ["the cat sat on a mat", "a dog"],
    ...     ["die Katze saß auf der Matte", "ein Hund"],
    ...     buckets=((1, 5), (6, 10)),
    ... )
    >>> {name: (row["sentences"], round(row["bleu"], 2)) for name, row in table.items()}
    {'1-5': (1, 0.0), '6-10': (1, 53.73)}
    """
    hypotheses, references = _check(hypotheses, references, "bleu_by_length")
    if isinstance(sources, str) or len(sources) != len(hypotheses):
        raise ValueError(
            "bleu_by_length: give one source text per hypothesis. Received: "
            f"{len(hypotheses)} hypotheses and sources={str(sources)[:80]}"
        )
    for bucket in buckets:
        if (
            not isinstance(bucket, (tuple, list))
            or len(bucket) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in bucket)
            or not 0 <= bucket[0] <= bucket[1]
        ):
            raise ValueError(
                "bleu_by_length: each bucket must be a pair of word counts "
                f"`(low, high)` with 0 <= low <= high. Received: bucket={bucket!r}"
            )
    lengths = [len(source.split()) for source in sources]
    table = {}
    for low, high in buckets:
        rows = [i for i, n in enumerate(lengths) if low <= n <= high]
        if rows:
            hyps = [hypotheses[i] for i in rows]
            refs = [references[i] for i in rows]
            table[f"{low}-{high}"] = {
                "sentences": len(rows),
                "bleu": bleu(hyps, refs),
                "chrf": chrf(hyps, refs),
            }
    return table


def pick_length_penalty(
    translate, sources, references, length_penalties=LENGTH_PENALTIES, metric=bleu
):
    """The beam's length penalty α that scores best on a development set.

    Translates `sources` once per α with `translate(sources, length_penalty=α)`
    and scores the outputs with `metric(hypotheses, references)`. GNMT's
    length penalty (Wu et al. 2016) divides a hypothesis' log-probability by
    ((5 + |Y|) / 6)^α; larger α favours longer outputs, and the best α
    depends on the model and data, so it is chosen on held-out pairs.

    Args:
        translate: callable `translate(texts, length_penalty=α) -> list of
            str`, e.g. `functools.partial(translator.translate, beam_size=4)`.
        sources: list of str, the development sources.
        references: list with, per source, one reference str or a list of
            reference strs.
        length_penalties: sequence of float α >= 0 to try. Defaults to
            `LENGTH_PENALTIES`, (0.0, 0.6, 1.0, 1.2, 1.4).
        metric: callable `metric(hypotheses, references) -> float`, higher is
            better. Defaults to `bleu`.

    Returns:
        `(best, scores)`: the α with the highest score (the first one listed
        on a tie) and a dict `{α: score}` of every α tried, in order.

    Example:

    >>> outputs = {0.0: ["a cat"], 1.0: ["a cat sat on the mat"]}
    >>> def translate(texts, length_penalty):
    ...     return outputs[length_penalty]
    >>> pick_length_penalty(
    ...     translate, ["eine Katze saß auf der Matte"], ["a cat sat on the mat"],
    ...     length_penalties=(0.0, 1.0), metric=chrf,
    ... )[0]
    1.0
    """
    if not callable(translate):
        raise ValueError(
            "pick_length_penalty: `translate` must be a callable "
            "`translate(texts, length_penalty=α)`, e.g. "
            "functools.partial(translator.translate, beam_size=4). "
            f"Received: translate={translate!r}"
        )
    length_penalties = list(length_penalties)
    if not length_penalties or not all(
        isinstance(a, (int, float)) and not isinstance(a, bool) and a >= 0
        for a in length_penalties
    ):
        raise ValueError(
            "pick_length_penalty: `length_penalties` must be a non-empty list "
            f"of numbers >= 0. Received: length_penalties={length_penalties!r}"
        )
    sources = list(sources)
    scores = {}
    for alpha in length_penalties:
        hypotheses = translate(sources, length_penalty=alpha)
        scores[alpha] = float(metric(hypotheses, references))
    return max(length_penalties, key=scores.get), scores
