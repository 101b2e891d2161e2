"""BLEU and chrF against sacrebleu and against the formulas; exact match; BLEU by
source length and the length penalty chosen on a development set."""

import math
import re
import sys
from collections import Counter

import pytest

from keras_rnnattn import metrics
from keras_rnnattn.metrics import (
    bleu,
    bleu_by_length,
    chrf,
    exact_match,
    pick_length_penalty,
)
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

sacrebleu = pytest.importorskip("sacrebleu")

HYPOTHESES = [
    "The child is developing normally.",
    "He did not come to the meeting yesterday",
    "Das ist ein kleines Haus am See.",
]
REFERENCES = [
    "The child develops normally.",
    "He didn't come to yesterday's meeting.",
    "Das ist ein kleines Haus am See.",
]


def ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def bleu_from_the_formula(hypotheses, references):
    """Papineni et al.: clipped n-gram precisions p_1..p_4 summed over the corpus,
    BP = exp(1 - r/c) when c < r, BLEU = 100 BP exp(mean log p_n). For lowercase
    words without punctuation sacrebleu's 13a tokenizer is a whitespace split."""
    matches, totals = [0] * 4, [0] * 4
    c = r = 0
    for hyp, ref in zip(hypotheses, references):
        h, t = hyp.split(), ref.split()
        c, r = c + len(h), r + len(t)
        for n in range(1, 5):
            hyp_counts, ref_counts = ngrams(h, n), ngrams(t, n)
            matches[n - 1] += sum(min(k, ref_counts[g]) for g, k in hyp_counts.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    brevity = 1.0 if c >= r else math.exp(1 - r / c)
    return 100 * brevity * math.exp(log_precision)


def chrf_from_the_formula(hypotheses, references, order=6, beta=2):
    """Popović 2015 as sacrebleu 2 averages it: character n-gram counts (spaces
    removed) summed over the corpus, precision and recall averaged over the
    orders both sides have, then F_beta."""
    stats = [[0, 0, 0] for _ in range(order)]
    for hyp, ref in zip(hypotheses, references):
        h, t = hyp.replace(" ", ""), ref.replace(" ", "")
        for n in range(1, order + 1):
            hc, tc = ngrams(list(h), n), ngrams(list(t), n)
            stats[n - 1][0] += sum(hc.values())
            stats[n - 1][1] += sum(tc.values())
            stats[n - 1][2] += sum((hc & tc).values())
    precisions = [m / h for h, t, m in stats if h and t]
    recalls = [m / t for h, t, m in stats if h and t]
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    return 100 * (1 + beta**2) * p * r / (beta**2 * p + r)


def test_bleu_equals_sacrebleu():
    expected = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score
    assert bleu(HYPOTHESES, REFERENCES) == pytest.approx(expected, abs=1e-9)
    assert 0 < expected < 100


def test_chrf_equals_sacrebleu():
    expected = sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score
    assert chrf(HYPOTHESES, REFERENCES) == pytest.approx(expected, abs=1e-9)
    plus = sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES], word_order=2).score
    assert chrf(HYPOTHESES, REFERENCES, word_order=2) == pytest.approx(plus, abs=1e-9)
    assert plus != expected


def test_bleu_by_hand():
    # One pair: p1 = 5/6 ("the" clipped to 1), p2 = 3/5, p3 = 2/4, p4 = 1/3,
    # same length, so BLEU = 100 (5/6 · 3/5 · 1/2 · 1/3)^(1/4) = 100 / 12^(1/4).
    hyp, ref = ["the cat sat on the mat"], ["the cat sat on a mat"]
    assert bleu(hyp, ref) == pytest.approx(100 / 12**0.25, abs=1e-9)
    assert bleu(hyp, ref) == pytest.approx(bleu_from_the_formula(hyp, ref), abs=1e-9)
    # Two pairs, counts summed over the corpus: matches (5+7, 3+6, 2+5, 1+4) of
    # (6+7, 5+6, 4+5, 3+4) n-grams; c = 13 < r = 16, so BP = exp(1 - 16/13).
    hyp = ["the cat sat on the mat", "a dog barked at the old man"]
    ref = ["the cat sat on a mat", "a dog barked at the old man in the park"]
    by_hand = 100 * math.exp(1 - 16 / 13) * (12 / 13 * 9 / 11 * 7 / 9 * 5 / 7) ** 0.25
    assert bleu(hyp, ref) == pytest.approx(by_hand, abs=1e-9)
    assert bleu(hyp, ref) == pytest.approx(bleu_from_the_formula(hyp, ref), abs=1e-9)


def test_chrf_by_hand():
    hyp = ["the child develops normally", "a small house"]
    ref = ["the child is developing normally", "the small house"]
    assert chrf(hyp, ref) == pytest.approx(chrf_from_the_formula(hyp, ref), abs=1e-9)


def test_identical_text_scores_100_and_disjoint_text_0():
    texts = ["Das Kind entwickelt sich ganz normal.", "Es regnet seit heute Morgen."]
    assert bleu(texts, texts) == pytest.approx(100.0)
    assert chrf(texts, texts) == pytest.approx(100.0)
    assert exact_match(texts, texts) == 100.0
    other = ["xyz qqq www vvv", "kkk jjj hhh ggg"]  # not one shared n-gram
    assert bleu(other, texts) == 0.0
    assert exact_match(other, texts) == 0.0


def test_scores_are_cased_unless_lowercase():
    hyp, ref = ["THE CAT SAT ON THE MAT"], ["the cat sat on the mat"]
    assert bleu(hyp, ref) == 0.0
    assert bleu(hyp, ref, lowercase=True) == pytest.approx(100.0)
    assert chrf(hyp, ref) < 10


def test_several_references_per_hypothesis():
    hyp = ["the cat sat on the mat", "a dog barked at the old man"]
    refs = [
        ["a cat was sitting on the mat", "the cat sat on the mat"],
        ["a dog barked at the old man"],  # fewer references: padded for sacrebleu
    ]
    assert bleu(hyp, refs) == pytest.approx(100.0)
    streams = [[r[0] for r in refs], [refs[0][1], None]]
    assert bleu(hyp, refs) == pytest.approx(sacrebleu.corpus_bleu(hyp, streams).score)
    assert chrf(hyp, refs) == pytest.approx(sacrebleu.corpus_chrf(hyp, streams).score)
    assert exact_match(["b"], [["a", "b"]]) == 100.0


def test_exact_match_compares_strings_as_they_are():
    hyps = ["Guten Tag.", "guten tag.", "Guten Tag. ", "Hallo"]
    refs = ["Guten Tag.", "Guten Tag.", "Guten Tag.", ["Hi", "Hallo"]]
    assert exact_match(hyps, refs) == 50.0


@pytest.mark.parametrize("metric", [bleu, chrf, exact_match])
@pytest.mark.parametrize(
    "hypotheses, references, message",
    [
        ("a text", ["a text"], "not one str"),
        (["a", "b"], ["a"], "2 hypotheses and 1 references"),
        ([], [], "no hypotheses"),
        (["a"], [[]], "non-empty list of str"),
        ([None], ["a"], "must be a str"),
    ],
)
def test_bad_input_is_refused(metric, hypotheses, references, message):
    with pytest.raises(ValueError, match=message):
        metric(hypotheses, references)


def test_missing_sacrebleu_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    for metric in (bleu, chrf):
        with pytest.raises(ImportError, match="pip install sacrebleu"):
            metric(["a b c d"], ["a b c d"])
    assert exact_match(["a"], ["a"]) == 100.0  # needs no sacrebleu


# --- BLEU by source length ----------------------------------------------------------
def test_bleu_by_length_equals_sacrebleu_on_each_bucket():
    sources = [
        "ein Satz",  # 2 words
        "das ist ein kurzer Satz hier",  # 6
        "Das Kind entwickelt sich normal und gesund.",  # 7
        "ein sehr langer Satz mit vielen vielen Wörtern darin heute",  # 10
        "drei Wörter hier",  # 3
    ]
    hypotheses = [
        "a sentence",
        "this is a short sentence here",
        "The child is developing normally and healthily.",
        "a very long sentence with many many words in it",
        "three words here",
    ]
    references = [
        "one sentence",
        "that is a short sentence here",
        ["The child develops normally and healthily.", "The kid grows normally."],
        "a very long sentence with lots of words in it today",
        "three words here",
    ]
    buckets = ((1, 5), (6, 8), (9, 12), (13, 20))
    table = bleu_by_length(hypotheses, references, sources, buckets=buckets)
    assert list(table) == ["1-5", "6-8", "9-12"]  # no sentence of 13-20 words
    for name, rows in (("1-5", [0, 4]), ("6-8", [1, 2]), ("9-12", [3])):
        hyps = [hypotheses[i] for i in rows]
        refs = [references[i] for i in rows]
        streams = [[r] if isinstance(r, str) else r for r in refs]
        streams = [
            [ref[j] if j < len(ref) else None for ref in streams] for j in range(2)
        ]
        assert table[name]["sentences"] == len(rows)
        assert table[name]["bleu"] == pytest.approx(
            sacrebleu.corpus_bleu(hyps, streams).score
        )
        assert table[name]["chrf"] == pytest.approx(
            sacrebleu.corpus_chrf(hyps, streams).score
        )
    # The default buckets are those of Bahdanau et al. (2014), Fig. 2.
    assert list(bleu_by_length(hypotheses, references, sources)) == [
        "1-5",
        "6-8",
        "9-12",
    ]


@pytest.mark.parametrize(
    "sources, buckets, message",
    [
        (["a"], ((1, 5),), "one source text per hypothesis"),
        ("a b", ((1, 5),), "one source text per hypothesis"),
        (["a", "b"], ((5, 1),), "Received: bucket=(5, 1)"),
        (["a", "b"], ((1.5, 3),), "pair of word counts"),
    ],
)
def test_bleu_by_length_refuses_bad_input(sources, buckets, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        bleu_by_length(["x", "y"], ["x", "y"], sources, buckets=buckets)


# --- The length penalty chosen on a development set ---------------------------------
def test_pick_length_penalty_picks_the_best_score():
    references = ["the cat sat on the mat", "the dog lay on the warm rug"]
    # Outputs per α: too short, right, too long (as a larger α lengthens them).
    outputs = {
        0.0: ["the cat", "the dog"],
        0.6: ["the cat sat on the mat", "the dog lay on the warm rug"],
        1.4: ["the cat sat on the mat and more", "the dog lay on the warm rug all day"],
    }
    asked = []

    def translate(texts, length_penalty):
        asked.append((list(texts), length_penalty))
        return outputs[length_penalty]

    sources = ["die Katze saß auf der Matte", "der Hund lag auf dem warmen Teppich"]
    best, scores = pick_length_penalty(
        translate, sources, references, length_penalties=(0.0, 0.6, 1.4)
    )
    assert best == 0.6
    assert list(scores) == [0.0, 0.6, 1.4]
    assert scores == {a: pytest.approx(bleu(outputs[a], references)) for a in outputs}
    assert scores[0.6] == pytest.approx(100.0)
    assert asked == [(sources, a) for a in (0.0, 0.6, 1.4)]
    # Another metric can pick another α: chrF prefers the long outputs to the
    # short ones, and the first α of a tie wins.
    best, _ = pick_length_penalty(
        translate, sources, references, length_penalties=(0.0, 1.4), metric=chrf
    )
    assert best == 1.4
    best, _ = pick_length_penalty(
        translate, sources, references, (1.4, 0.6, 0.6), metric=lambda h, r: 1.0
    )
    assert best == 1.4
    assert metrics.LENGTH_PENALTIES == (0.0, 0.6, 1.0, 1.2, 1.4)


@pytest.mark.parametrize(
    "translate, penalties, message",
    [
        ("not callable", (0.0,), "must be a callable"),
        (lambda texts, length_penalty: texts, (), "non-empty list"),
        (lambda texts, length_penalty: texts, (-1.0,), "Received: length_penalties"),
    ],
)
def test_pick_length_penalty_refuses_bad_input(translate, penalties, message):
    with pytest.raises(ValueError, match=message):
        pick_length_penalty(translate, ["a"], ["a"], length_penalties=penalties)


@pytest.mark.parametrize(
    "module, examples",
    [
        ("sacrebleu_scores", 4),
        ("error_rates", 3),
        ("punctuation", 2),
        ("length_buckets", 5),
    ],
)
def test_docstring_examples_run(module, examples):
    # Every public function's example, module by module (`>>>` lines counted).
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"keras_rnnattn.metrics.{module}"))
    assert result.attempted == examples and result.failed == 0


# --- sacrebleu's signatures ---------------------------------------------------------
BLEU_SIGNATURE = re.compile(
    r"nrefs:(\d+)\|case:(mixed|lc)\|eff:(yes|no)\|tok:([\w-]+)\|smooth:(\w+)"
    r"\|version:(\d+\.\d+\.\d+)"
)
CHRF_SIGNATURE = re.compile(
    r"nrefs:(\d+)\|case:(mixed|lc)\|eff:(yes|no)\|nc:(\d+)\|nw:(\d+)\|space:(yes|no)"
    r"\|version:(\d+\.\d+\.\d+)"
)


def test_signatures_are_sacrebleus_for_the_same_settings():
    from sacrebleu.metrics import BLEU, CHRF

    refs = [[r] for r in REFERENCES]
    scored = BLEU()
    scored.corpus_score(HYPOTHESES, list(zip(*refs)))
    assert metrics.bleu_signature() == str(scored.get_signature())
    assert BLEU_SIGNATURE.fullmatch(metrics.bleu_signature()).groups() == (
        "1",
        "mixed",
        "no",
        "13a",
        "exp",
        sacrebleu.__version__,
    )
    scored = CHRF(word_order=2)
    scored.corpus_score(HYPOTHESES, [REFERENCES, REFERENCES])
    assert metrics.chrf_signature(word_order=2, num_references=2) == str(
        scored.get_signature()
    )
    signature = metrics.chrf_signature()
    assert CHRF_SIGNATURE.fullmatch(signature).groups()[:5] == (
        "1",
        "mixed",
        "yes",
        "6",
        "0",
    )
    lowercased = metrics.bleu_signature(lowercase=True, tokenize="intl")
    assert "case:lc" in lowercased and "tok:intl" in lowercased


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "1"])
def test_signature_needs_a_number_of_references(count):
    with pytest.raises(ValueError, match="num_references"):
        metrics.bleu_signature(num_references=count)
