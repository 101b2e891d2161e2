"""LengthBucketedBatches: buckets, padding, epochs, seeds, encode_fn and `fit`."""

import doctest

import keras
import numpy as np
import pytest

from keras_rnnattn.datasets import LengthBucketedBatches, length_buckets


def rows_of_lengths(lengths, width=24):
    """Right-padded id rows; row i holds i + 1 first (its name), then 5s."""
    ids = np.zeros((len(lengths), width), "int32")
    for i, n in enumerate(lengths):
        ids[i, :n] = 5
        ids[i, 0] = i + 1
    return ids


LENGTHS = np.random.default_rng(0).integers(1, 20, size=43)


def names(batch):
    """The row names of a batch (x, or the first array of x)."""
    x = batch[0] if isinstance(batch, tuple) else batch
    x = x[0] if isinstance(x, tuple) else x
    return x[:, 0].tolist()


def epoch_names(data):
    return [names(data[i]) for i in range(len(data))]


def test_every_row_appears_once_per_epoch():
    x = rows_of_lengths(LENGTHS)
    data = LengthBucketedBatches(x, x, batch_size=5, seed=0)
    assert len(data) == 9  # 43 rows: 8 full batches and one of 3
    for _ in range(3):
        seen = [name for batch in epoch_names(data) for name in batch]
        assert sorted(seen) == list(range(1, 44))
        data.on_epoch_end()


def test_batches_hold_rows_of_similar_length():
    x = rows_of_lengths(LENGTHS)
    data = LengthBucketedBatches(x, batch_size=5, shuffle=False, pad_to_multiple_of=1)
    by_length = np.sort(LENGTHS)
    for k in range(len(data)):
        rows = np.array(names(data[k])) - 1
        # Batch k (in bucket order) holds the 5k-th to (5k+4)-th shortest rows.
        assert sorted(LENGTHS[rows]) == by_length[5 * k : 5 * k + 5].tolist()
    # Far less padding than batches of rows in their given order.
    padded = sum(data[k].size for k in range(len(data)))
    given = sum(
        len(LENGTHS[i : i + 5]) * LENGTHS[i : i + 5].max() for i in range(0, 43, 5)
    )
    assert padded - LENGTHS.sum() < 0.25 * (given - LENGTHS.sum())


def test_each_batch_is_padded_to_a_multiple():
    x = rows_of_lengths(LENGTHS)
    data = LengthBucketedBatches(x, x, batch_size=4, seed=1, pad_to_multiple_of=8)
    widths = set()
    for k in range(len(data)):
        batch_x, batch_y = data[k]
        rows = np.array(names(batch_x)) - 1
        longest = LENGTHS[rows].max()
        assert batch_x.shape == batch_y.shape == (len(rows), -(-longest // 8) * 8)
        # The same tokens as given, only the padding differs.
        np.testing.assert_array_equal(
            batch_x, np.pad(x[rows], ((0, 0), (0, 8)))[:, : batch_x.shape[1]]
        )
        widths.add(batch_x.shape[1])
    assert widths == {8, 16, 24}  # few shapes to compile


def test_one_length_for_all_arrays_or_each_its_own():
    source = rows_of_lengths([10, 1, 2, 11])
    target = rows_of_lengths([2, 3, 2, 3], width=6)
    common = LengthBucketedBatches(
        source, target, batch_size=2, shuffle=False, pad_to_multiple_of=4
    )
    own = LengthBucketedBatches(
        source, target, batch_size=2, shuffle=False, pad_to_multiple_of=(8, 2)
    )
    # Sorted by target length: rows 0 and 2 (targets of 2), then 1 and 3 (3).
    for k, own_widths in enumerate([(16, 2), (16, 4)]):
        (s, t), (s2, t2) = common[k], own[k]
        assert s.shape[1] == t.shape[1] == 12  # the longest side, rounded up
        assert (s2.shape[1], t2.shape[1]) == own_widths  # each its own multiple
        np.testing.assert_array_equal(s[:, :12], s2[:, :12])
        np.testing.assert_array_equal(t[:, : t2.shape[1]], t2)
    with pytest.raises(ValueError, match="one multiple per array: 2 arrays"):
        LengthBucketedBatches(source, target, batch_size=2, pad_to_multiple_of=(8,))


def test_the_seed_repeats_the_order_and_each_epoch_draws_a_new_one():
    x = rows_of_lengths(LENGTHS)
    runs = []
    for seed in (3, 3, 4):
        data = LengthBucketedBatches(x, batch_size=4, seed=seed)
        epochs = []
        for _ in range(3):
            epochs.append(epoch_names(data))
            data.on_epoch_end()
        runs.append(epochs)
    assert runs[0] == runs[1]  # the same seed, the same epochs
    assert runs[0] != runs[2]
    first, second, third = runs[0]
    assert first != second and second != third  # a new order every epoch
    # Only the order changes: the buckets stay.
    assert sorted(map(sorted, first)) == sorted(map(sorted, second))
    # Without shuffling, every epoch is in bucket order.
    data = LengthBucketedBatches(x, batch_size=4, shuffle=False)
    before = epoch_names(data)
    data.on_epoch_end()
    assert epoch_names(data) == before
    # In bucket order, but for the batch moved up to second place (see below).
    longest = [LENGTHS[np.array(b) - 1].max() for b in before]
    assert np.all(np.diff([longest[0]] + longest[2:]) >= 0)


def test_each_epoch_starts_with_two_batches_of_different_widths():
    """Keras on TensorFlow fixes the dimensions on which a PyDataset's first
    two batches agree: the second batch's widths differ from the first's."""
    x = rows_of_lengths(LENGTHS)
    moved = 0
    for seed in range(20):
        data = LengthBucketedBatches(x, x, batch_size=4, seed=seed)
        widths = [data[k][0].shape[1] for k in range(len(data))]
        assert widths[0] != widths[1]
        # The rest of the seeded order is kept: at most one batch moved up.
        drawn = np.random.default_rng(seed).permutation(len(data)).tolist()
        order = data.order.tolist()
        if order != drawn:
            moved += 1
            assert order[0] == drawn[0]
            assert order[2:] == [b for b in drawn[1:] if b != order[1]]
    assert moved > 0  # some seeds draw two batches of one width first
    # Unshuffled: the two shortest buckets share a width, so the first batch
    # of the next width comes second, then the other buckets in order.
    data = LengthBucketedBatches(x, batch_size=4, shuffle=False)
    widths = [data[k].shape[1] for k in range(len(data))]
    assert widths[:3] == [8, 16, 8]
    order = data.order.tolist()
    assert order[0] == 0 and order[2:] == [b for b in range(1, 11) if b != order[1]]


def test_drop_remainder_leaves_out_the_longest_partial_batch():
    x = rows_of_lengths(LENGTHS)
    data = LengthBucketedBatches(x, batch_size=5, seed=0, drop_remainder=True)
    assert len(data) == 8
    kept = [name for batch in epoch_names(data) for name in batch]
    assert len(kept) == 40
    left_out = np.setdiff1d(np.arange(43), np.array(kept) - 1)
    assert LENGTHS[left_out].min() >= LENGTHS[np.array(kept) - 1].max()


def test_encode_fn_makes_the_data_afresh_every_epoch():
    pool = rows_of_lengths(LENGTHS)
    calls = []

    def encode_fn(rng):
        calls.append(rng)
        rows = rng.choice(len(pool), 12, replace=False)  # a fresh sample
        return (pool[rows], pool[rows]), pool[rows, :3]

    data = LengthBucketedBatches(encode_fn=encode_fn, batch_size=4, seed=7)
    assert len(calls) == 1 and calls[0] is data.rng
    samples = []
    for epoch in range(3):
        samples.append(sorted(n for batch in epoch_names(data) for n in batch))
        (source, target_in), target_out = data[0]
        assert target_out.shape[1] == source.shape[1]  # one length for all
        data.on_epoch_end()
        assert len(calls) == epoch + 2
    assert len({tuple(s) for s in samples}) == 3
    # The sampling repeats with the seed.
    again = LengthBucketedBatches(encode_fn=encode_fn, batch_size=4, seed=7)
    assert sorted(n for batch in epoch_names(again) for n in batch) == samples[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "not both nor neither"),
        ({"x": np.ones((2, 3)), "encode_fn": lambda rng: None}, "not both nor neither"),
        ({"encode_fn": "no"}, "Received: encode_fn='no'"),
        ({"x": np.ones((2, 3)), "batch_size": 0}, "Received: batch_size=0"),
        ({"x": np.ones((2, 3)), "batch_size": 2.0}, "Received: batch_size=2.0"),
        ({"x": np.ones((2, 3)), "pad_to_multiple_of": 0}, "pad_to_multiple_of=0"),
        ({"x": np.ones(3)}, r"Received: shapes \[\(3,\)\]"),
        ({"x": np.ones((2, 3)), "y": np.ones((3, 3))}, "same number of rows"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LengthBucketedBatches(**kwargs)


def test_index_past_the_last_batch_raises_index_error():
    data = LengthBucketedBatches(rows_of_lengths([1, 2, 3]), batch_size=2)
    with pytest.raises(IndexError, match="Received: index=2"):
        data[2]


def test_fit_and_predict_on_length_bucketed_batches():
    """A per-token tagger learns which tokens are 7s from batches of several
    shapes, and `fit` starts every epoch on a new batch order."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 14, size=96)
    x = np.zeros((96, 16), "int32")
    for i, n in enumerate(lengths):
        x[i, :n] = rng.choice([5, 6, 7], n)
    y = (x == 7).astype("int32")
    # Widths 8 and 16; seed 2 draws two batches of width 16 first, which
    # TensorFlow cannot take (it fixes the width its first two batches share).
    data = LengthBucketedBatches(x, y, batch_size=16, seed=2)
    orders = []
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(8, 8, mask_zero=True),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
    record = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: orders.append(data.order.tolist())
    )
    history = model.fit(data, epochs=2, callbacks=[record], verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert orders[0] != orders[1]
    # Inputs alone (no targets) for prediction.
    inputs = LengthBucketedBatches(x, batch_size=96, shuffle=False)
    correct = total = 0
    for k in range(len(inputs)):
        rows = inputs.batches[inputs.order[k]]
        batch = inputs[k]
        predicted = np.argmax(model.predict_on_batch(batch), axis=-1)  # (96, W)
        real = batch != 0
        correct += np.sum(predicted[real] == y[rows][:, : batch.shape[1]][real])
        total += np.sum(real)
    assert total == lengths.sum() and correct / total > 0.95


def test_docstring_example_runs():
    result = doctest.testmod(length_buckets)
    assert result.attempted >= 3 and result.failed == 0
