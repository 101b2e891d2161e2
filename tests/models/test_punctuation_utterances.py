"""`utterance_tags`: a short line is one sentence unless the tagger is sure."""

import numpy as np

from keras_rnnattn.models.punctuation_utterances import utterance_tags
from tests.backends import on_one_backend

pytestmark = on_one_backend  # NumPy only: the same on every backend

# Rows: no mark, comma, full stop, question mark.
UNSURE_END = [0.5, 0.1, 0.3, 0.1]
COMMA_MORE = [0.3, 0.4, 0.2, 0.1]
SURE_END = [0.0, 0.0, 0.97, 0.03]
PLAIN = [0.97, 0.01, 0.01, 0.01]
ASKS = [0.7, 0.0, 0.05, 0.25]


def test_an_unsure_sentence_end_inside_a_line_goes_and_its_capital_with_it():
    tags = ["lower_O", "lower_QUESTION", "title_O", "lower_PERIOD", "title_O"]
    marks = [PLAIN, UNSURE_END, PLAIN, COMMA_MORE, PLAIN]
    assert utterance_tags(tags, marks, keep_inside=0.95, question=0.2) == [
        "title_O", "lower_O", "lower_O", "lower_COMMA", "lower_PERIOD",
    ]  # fmt: skip


def test_a_sure_sentence_end_stays_and_only_the_last_sentence_decides_its_mark():
    tags = ["lower_O", "lower_QUESTION", "lower_O", "lower_O"]
    marks = [ASKS, SURE_END, PLAIN, PLAIN]
    # The question probability of word 0 belongs to the first sentence.
    assert utterance_tags(tags, marks, keep_inside=0.95, question=0.2) == [
        "title_O", "lower_QUESTION", "title_O", "lower_PERIOD",
    ]  # fmt: skip
    marks = [PLAIN, SURE_END, ASKS, PLAIN]
    assert utterance_tags(tags, marks, keep_inside=0.95, question=0.2)[-1] == (
        "lower_QUESTION"
    )
    # Past the threshold the line is a statement.
    assert utterance_tags(tags, marks, keep_inside=0.95, question=0.3)[-1] == (
        "lower_PERIOD"
    )


def test_a_question_the_tagger_put_inside_makes_the_line_a_question():
    tags = ["lower_O", "lower_QUESTION", "lower_O", "lower_QUESTION"]
    marks = np.array([PLAIN, [0.2, 0.0, 0.1, 0.7], PLAIN, [0.1, 0.0, 0.1, 0.8]])
    assert utterance_tags(tags, marks) == [
        "title_O", "lower_O", "lower_O", "lower_QUESTION",
    ]  # fmt: skip
    assert utterance_tags([], np.zeros((0, 4))) == []
