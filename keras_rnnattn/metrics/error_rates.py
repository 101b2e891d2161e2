"""Exact match, and the word and phoneme error rates of sequences of
space-separated tokens (phonemes, tags)."""

from keras_rnnattn.metrics._pairs import check_pairs


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
    hypotheses, references = check_pairs(hypotheses, references, "exact_match")
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
    hypotheses, references = check_pairs(hypotheses, references, "word_error_rate")
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
    hypotheses, references = check_pairs(hypotheses, references, "phoneme_error_rate")
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
