"""Tests of the split rule and of k-fold indices against scikit-learn's KFold."""

import numpy as np
import pytest

from keras_rnnattn.datasets import kfold_indices, split_indices
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend


def test_split_indices_partition():
    n = 50
    parts = [split_indices(n, s, 7, 5) for s in ("test", "validation", "train")]
    assert [len(p) for p in parts] == [7, 5, 38]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(n))
    np.testing.assert_array_equal(split_indices(n, "all", 7, 5), np.arange(n))
    perm = np.random.default_rng(1234).permutation(n)
    np.testing.assert_array_equal(parts[0], perm[:7])


def test_kfold_matches_sklearn_algorithm_on_known_values():
    # Written down from scikit-learn 1.x KFold(10, shuffle=True, random_state=1234)
    # on 10,568 items (the movie snippets).
    folds = kfold_indices(10568)
    assert [len(test) for _, test in folds] == [1057] * 8 + [1056] * 2
    assert folds[0][1][:10].tolist() == [1, 2, 5, 14, 18, 19, 25, 43, 45, 73]
    assert folds[9][1][-5:].tolist() == [10544, 10546, 10559, 10564, 10567]
    for train, test in folds:
        assert len(np.intersect1d(train, test)) == 0
        assert len(train) + len(test) == 10568
        assert (np.diff(train) > 0).all() and (np.diff(test) > 0).all()


@pytest.mark.parametrize("n, k, seed", [(10568, 10, 1234), (37, 5, 7), (6, 3, 0)])
def test_kfold_equals_sklearn_when_installed(n, k, seed):
    model_selection = pytest.importorskip("sklearn.model_selection")
    reference = model_selection.KFold(k, shuffle=True, random_state=seed)
    for (train, test), (ref_train, ref_test) in zip(
        kfold_indices(n, k, seed), reference.split(np.zeros(n)), strict=True
    ):
        np.testing.assert_array_equal(train, ref_train)
        np.testing.assert_array_equal(test, ref_test)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_splits=1"):
        kfold_indices(10, n_splits=1)
    with pytest.raises(ValueError, match="split='dev'"):
        split_indices(10, "dev", 1, 1)
