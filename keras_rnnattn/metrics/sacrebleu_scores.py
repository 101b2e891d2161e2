"""Corpus BLEU and chrF through sacrebleu, and the signatures that name
exactly how they were computed."""

from keras_rnnattn.metrics._pairs import check_pairs


def _sacrebleu():
    try:
        import sacrebleu
    except ImportError as error:
        raise ImportError(
            "BLEU and chrF need sacrebleu: pip install sacrebleu "
            "(or pip install '.[data]')."
        ) from error
    return sacrebleu


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
    hypotheses, references = check_pairs(hypotheses, references, "bleu")
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
    hypotheses, references = check_pairs(hypotheses, references, "chrf")
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
