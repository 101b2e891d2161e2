"""`applications/punctuation_en/train.py --mark-weights`: rare marks weigh more."""

import collections

import numpy as np

from applications.punctuation_en.train import mark_weights
from keras_rnnattn.text import PUNCTUATION_TAGS
from tests.backends import on_one_backend

pytestmark = on_one_backend  # NumPy only: the same on every backend


def test_each_piece_weighs_the_inverse_share_of_its_mark_to_a_power():
    rng = np.random.default_rng(0)
    y = rng.choice(len(PUNCTUATION_TAGS), size=(20, 30), p=None).astype("int32")
    y[:, 20:] = 0  # padding
    marks = [[PUNCTUATION_TAGS[j].split("_")[1] for j in row] for row in y]
    counts = collections.Counter(m for row in marks for m in row)
    for power in (0.5, 1.0):
        expected = [[(counts["O"] / counts[m]) ** power for m in row] for row in marks]
        np.testing.assert_allclose(mark_weights(y, power), expected, rtol=1e-6)
    assert (mark_weights(y, 0.0) == 1.0).all()
