"""`metrics.punctuation_scores` against scikit-learn's per-class and micro
precision, recall and F1, and by hand."""

import numpy as np
import pytest

from keras_rnnattn.metrics import punctuation_scores
from keras_rnnattn.text import PUNCTUATION_TAGS
from tests.backends import on_one_backend

pytestmark = on_one_backend  # NumPy and Python only


def test_equals_scikit_learn_per_class_and_micro():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    # Mostly right, with every kind of mistake: 2,000 words.
    true = list(rng.choice(PUNCTUATION_TAGS, 2000, p=[0.5] + [0.5 / 11] * 11))
    predicted = [
        t if rng.random() < 0.7 else rng.choice(PUNCTUATION_TAGS) for t in true
    ]
    scores = punctuation_scores([predicted[:1500], predicted[1500:]],
                                [true[:1500], true[1500:]])  # fmt: skip
    for part, classes, overall in (
        (1, ["COMMA", "PERIOD", "QUESTION"], "overall"),
        (0, ["title", "upper"], "case_overall"),
    ):
        y_true = [t.split("_")[part] for t in true]
        y_pred = [p.split("_")[part] for p in predicted]
        p, r, f, s = sklearn_metrics.precision_recall_fscore_support(
            y_true, y_pred, labels=classes, zero_division=0
        )
        for i, name in enumerate(classes):
            got = scores[name]
            np.testing.assert_allclose(
                [got["precision"], got["recall"], got["f1"]],
                [100 * p[i], 100 * r[i], 100 * f[i]],
            )
            assert got["support"] == s[i]
        micro = sklearn_metrics.precision_recall_fscore_support(
            y_true, y_pred, labels=classes, average="micro", zero_division=0
        )
        np.testing.assert_allclose(
            [scores[overall][k] for k in ("precision", "recall", "f1")],
            [100 * v for v in micro[:3]],
        )


def test_by_hand():
    # True: COMMA, PERIOD, O, QUESTION; predicted: COMMA, COMMA, PERIOD, O.
    scores = punctuation_scores(
        ["lower_COMMA", "title_COMMA", "lower_PERIOD", "upper_O"],
        ["lower_COMMA", "title_PERIOD", "title_O", "upper_QUESTION"],
    )
    assert scores["COMMA"] == {
        "precision": 50.0, "recall": 100.0, "f1": 200 / 3, "support": 1
    }  # fmt: skip
    assert scores["PERIOD"]["precision"] == 0.0 and scores["PERIOD"]["recall"] == 0.0
    assert scores["QUESTION"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1
    }  # fmt: skip
    # One right mark of three predicted and three true.
    assert scores["overall"]["precision"] == pytest.approx(100 / 3)
    assert scores["overall"]["recall"] == pytest.approx(100 / 3)
    # Case: title predicted once (right), true twice; upper right once.
    assert scores["title"]["precision"] == 100.0 and scores["title"]["recall"] == 50.0
    assert scores["upper"]["f1"] == 100.0
    assert scores["case_overall"]["recall"] == pytest.approx(200 / 3)


@pytest.mark.parametrize(
    "predicted, true, message",
    [
        ("lower_O", ["lower_O"], "list of tags, not one str"),
        (["lower_O"], ["lower_O", "lower_O"], "one predicted tag per true tag"),
        (["COMMA"], ["lower_O"], "<case>_<punctuation>"),
    ],
)
def test_bad_input_is_refused(predicted, true, message):
    with pytest.raises(ValueError, match=message):
        punctuation_scores(predicted, true)
