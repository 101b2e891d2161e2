"""Short lines as units: what a speech recogniser emits as one line of a few
words is one sentence, unless the tagger is sure it holds two.

A tagger trained on running text cuts short lines where running text would
go on ("Where did? You put? My keys?"). `utterance_tags` keeps a sentence
end inside a line only where the tagger gives it a high probability, and
ends the line with a question mark where the tagger gives any of its words
a fair chance of one ("Where did you put my keys?").
"""

import numpy as np

from keras_rnnattn.models.punctuation_stream import sentence_tags

# The longest text `restore_punctuation` reads as one utterance.
UTTERANCE_WORDS = 15
# Chosen on the validation split's short lines (applications/punctuation_en/
# short_lines.py --tune): the probability of a sentence end inside a line at
# which it is kept, and the question probability that makes a line a question.
KEEP_INSIDE = 0.95
QUESTION = 0.2


def utterance_tags(tags, marks, keep_inside=KEEP_INSIDE, question=QUESTION):
    """The tags of a short line read as one utterance.

    A full stop or question mark inside the line is kept only where its
    probability (full stop and question mark together) is at least
    `keep_inside`; otherwise it becomes a comma (where a comma is likelier
    than nothing) or nothing, and the next word loses the capital the
    sentence start gave it. The last sentence of the line ends with a
    question mark when any of its words has a question mark probability of
    at least `question`, else with a full stop. Sentence starts are
    capitalised (`sentence_tags`).

    Args:
        tags: list of `PUNCTUATION_TAGS` tags, one per word.
        marks: array `(words, 4)`, each word's probabilities of no mark, a
            comma, a full stop and a question mark (`tag_word_lists(...,
            with_marks=True)`).
        keep_inside: float, see above.
        question: float, see above.

    Returns:
        list of str, the new tags.

    Example:

    >>> import numpy as np
    >>> marks = np.array([[0.3, 0.1, 0.3, 0.3], [0.9, 0, 0.1, 0], [0, 0, 0.6, 0.4]])
    >>> utterance_tags(["lower_QUESTION", "title_O", "lower_PERIOD"], marks)
    ['title_O', 'lower_O', 'lower_QUESTION']
    """
    out = [tag.split("_") for tag in tags]
    marks = np.asarray(marks, "float32")
    start = 0  # the first word of the last sentence
    for i in range(len(out) - 1):
        if out[i][1] not in ("PERIOD", "QUESTION"):
            continue
        if marks[i, 2] + marks[i, 3] >= keep_inside:
            start = i + 1
            continue
        out[i][1] = "COMMA" if marks[i, 1] > marks[i, 0] else "O"
        if out[i + 1][0] == "title":
            out[i + 1][0] = "lower"
    if out:
        asked = marks[start:, 3].max() >= question
        out[-1][1] = "QUESTION" if asked else "PERIOD"
    return sentence_tags([f"{c}_{m}" for c, m in out], True, True)[0]
