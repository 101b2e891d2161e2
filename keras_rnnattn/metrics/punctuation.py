"""Per-class precision, recall and F1 of punctuation and capitalisation tags."""


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
