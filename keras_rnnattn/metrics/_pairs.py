"""The hypotheses and references every text metric takes, checked and made lists."""


def check_pairs(hypotheses, references, owner):
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
