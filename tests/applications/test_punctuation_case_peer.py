"""The case scores of `applications/punctuation_en/case_peer.py`: by hand, and
on the `truecase` package's own output."""

import pytest

from applications.punctuation_en.case_peer import case_breakdown, truecase_tags
from keras_rnnattn.text import punctuation_tags
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_case_breakdown_by_hand():
    true = ["title_O", "title_O", "lower_PERIOD", "title_O", "upper_O", "lower_O"]
    got = ["title_O", "lower_O", "lower_PERIOD", "lower_O", "upper_O", "title_O"]
    scores = case_breakdown(got, true)
    # starts: words 0 and 3 (1 of 2); other capitalised: 1 and 4 (1 of 2);
    # lowercase: 2 and 5 (1 of 2).
    assert scores["sentence_starts"] == scores["other_capitalised"] == 50.0
    assert scores["lower_kept"] == 50.0 and scores["all"] == 50.0
    assert scores["sentence_starts_words"] == 2


def test_truecase_cases_names_in_each_true_sentence():
    truecase = pytest.importorskip("truecase.TrueCaser", reason="pip install truecase")
    words, true = punctuation_tags("I met John in Paris last May. The NASA team left.")
    cased = truecase_tags(truecase.TrueCaser(), words, true)
    assert [t.split("_")[0] for t in cased] == [t.split("_")[0] for t in true]
    assert case_breakdown(cased, true)["all"] == 100.0
