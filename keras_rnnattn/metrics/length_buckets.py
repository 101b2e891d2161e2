"""BLEU and chrF by source length, and the beam's length penalty that scores
best on a development set."""

from keras_rnnattn.metrics._pairs import check_pairs
from keras_rnnattn.metrics.sacrebleu_scores import bleu, chrf

# Buckets of source length in words of Bahdanau et al. (2014), Fig. 2.
LENGTH_BUCKETS = ((1, 5), (6, 8), (9, 12), (13, 20), (21, 200))
# GNMT α values tried by `pick_length_penalty` (Wu et al. 2016 found 0.6-1.0).
LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.2, 1.4)


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
    hypotheses, references = check_pairs(hypotheses, references, "bleu_by_length")
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
