"""`tf.data.Dataset`s of strings tokenized inside the input pipeline.

`TextTask.fit`, `evaluate` and `predict` read a dataset whose inputs are
strings through `encode_text_dataset`: each batch of texts (and of targets,
strings or numbers) goes through the model's own `preprocess_samples`, the
code that reads Python lists, in a `tf.numpy_function`. So a dataset gives
exactly the ids that the same texts given as a list give, nothing is read into
memory ahead of its batch (a dataset larger than memory streams), and the
pipeline runs on every Keras backend (Keras reads `tf.data` on JAX and torch
too).

An unbatched dataset of texts is batched here: for `fit` and `evaluate` into
batches of texts of similar length (pools of `POOL_BATCHES` batches sorted by
the word count of the first text of each element, then cut into batches of
`batch_size`, so that the number of batches is known), for `predict` in
order. Each batch's id rows are padded to its longest row
rounded up to a multiple of `PAD_MULTIPLE` (at most the model's
`max_length`), so batches come in few shapes: JAX and XLA compile once per
shape.
"""

import numpy as np

from keras_rnnattn.text import inputs as text_inputs

PAD_MULTIPLE = 8
# Batches sorted by length together (see `_batch`).
POOL_BATCHES = 16


def is_text_dataset(x):
    """Whether `x` is a `tf.data.Dataset` whose inputs (first part) are strings."""
    dataset = text_inputs.as_dataset(x)
    if dataset is None:
        return False
    import tensorflow as tf

    spec = dataset.element_spec
    first = spec[0] if isinstance(spec, tuple) and spec else spec
    leaves = tf.nest.flatten(first)
    return any(getattr(leaf, "dtype", None) == tf.string for leaf in leaves)


def encode_text_dataset(
    dataset,
    preprocess,
    owner,
    with_targets=True,
    batch_size=None,
    bucketed=True,
    pad_id=0,
    max_length=None,
):
    """A dataset of texts mapped to the model's ids, batch by batch.

    Args:
        dataset: a `tf.data.Dataset` of texts, or of `(texts, targets)` or
            `(texts, targets, sample_weights)`; texts and targets batched
            `(batch,)` or one per element `()`. Targets are strings (label
            names, target sentences, space-separated tags) or numbers.
        preprocess: `preprocess(texts, targets) -> (x, y)`, the model's reading
            of Python lists (`texts` a list of str, `targets` a list of str,
            a NumPy array or None); `x` and `y` NumPy arrays or tuples of them.
        owner: str, the caller named in errors (`"AttentionClassifier.fit"`).
        with_targets: bool, False for `predict` (targets, if any, are read
            and passed on all the same).
        batch_size: int, the batch size of an unbatched dataset (32 if None).
        bucketed: bool, whether an unbatched dataset is batched by length
            (for `fit` and `evaluate`) or in order (`predict`).
        pad_id: int, the padding id of the id rows.
        max_length: int or None, the longest id row the model reads.

    Returns:
        A `tf.data.Dataset` of `(x, y[, sample_weights])` (or `x` alone when
        the dataset holds texts alone and the model's targets come from them
        or are not needed), ids int32.
    """
    import tensorflow as tf

    spec = dataset.element_spec
    parts = spec if isinstance(spec, tuple) else (spec,)
    if len(parts) > 3:
        raise ValueError(
            f"{owner}: a dataset of texts must yield texts, (texts, targets) or "
            f"(texts, targets, sample_weights). Received: element_spec={spec}"
        )
    for i, part in enumerate(parts[:2]):
        if not isinstance(part, tf.TensorSpec):
            what = "texts" if i == 0 else "targets"
            raise ValueError(
                f"{owner}: the dataset's {what} must be one tensor per element "
                "(strings, or numbers for targets; tags as one space-separated "
                f"string per text). Received: {part}"
            )
    rank = parts[0].shape.rank
    if parts[0].dtype != tf.string or rank not in (0, 1):
        raise ValueError(
            f"{owner}: the dataset's texts must be strings, one per element or "
            f"batched (batch,). Received: {parts[0]}"
        )
    if rank == 0:
        dataset = _batch(dataset, batch_size or 32, bucketed and with_targets)
        spec = dataset.element_spec
        parts = spec if isinstance(spec, tuple) else (spec,)

    def read(values):
        """A batch of strings as a list of str, numbers as an array."""
        array = np.asarray(values)
        if array.dtype.kind in ("S", "O", "U"):
            return [
                v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array
            ]
        return array

    def run(texts, targets=None):
        x, y = preprocess(read(texts), None if targets is None else read(targets))
        return _pad_id_rows((x, y), pad_id, max_length)

    # The output structure, from the first batch.
    first = next(iter(dataset.take(1)))
    first = first if isinstance(first, tuple) else (first,)
    example = run(*[t.numpy() for t in first[:2]])
    leaves = [leaf for leaf in _flatten(example)]
    dtypes = [tf.as_dtype(leaf.dtype) for leaf in leaves]

    def flat_run(*values):
        return [np.asarray(leaf) for leaf in _flatten(run(*values))]

    def encode(*element):
        inputs = list(element[:2])
        out = tf.numpy_function(flat_run, inputs, dtypes, stateful=False)
        for tensor, leaf in zip(out, leaves, strict=True):
            tensor.set_shape([None] * leaf.ndim)
        x, y = _pack(example, list(out))
        if y is None:
            return x if len(element) < 3 else (x, None, element[2])
        return (x, y) + tuple(element[2:])

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _batch(dataset, batch_size, bucketed):
    """Batches an unbatched dataset: by length where `bucketed`, else in order.

    By length: pools of `POOL_BATCHES` batches are sorted by word count, then
    cut into batches, so that each batch holds texts of similar length and a
    dataset of N texts gives ceil(N / batch_size) batches, a number set on the
    dataset when N is known. Keras then ends each epoch at that count; with an
    unknown count it reads until the data runs out and warns that it did.
    """
    import tensorflow as tf

    if not bucketed:
        return dataset.batch(batch_size)

    def by_length(*pool):
        words = tf.strings.split(tf.strings.strip(pool[0]))  # (P, None) ragged
        order = tf.argsort(words.row_lengths(), stable=True)
        out = tuple(tf.gather(part, order) for part in pool)
        return out if len(out) > 1 else out[0]

    count = int(dataset.cardinality())
    batches = (
        dataset.batch(batch_size * POOL_BATCHES)
        .map(by_length, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .unbatch()
        .batch(batch_size)
    )
    if count >= 0:
        batches = batches.apply(
            tf.data.experimental.assert_cardinality(-(-count // batch_size))
        )
    return batches


def _flatten(structure):
    """The arrays of a nested tuple of arrays (None left out), in order."""
    if structure is None:
        return []
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(template, leaves):
    """`template`'s nested tuples with `leaves` in place of its arrays."""
    if template is None:
        return None
    if isinstance(template, (tuple, list)):
        return tuple(_pack(item, leaves) for item in template)
    return leaves.pop(0)


def _pad_id_rows(structure, pad_id, max_length):
    """Pads each int `(N, L)` array to L rounded up to `PAD_MULTIPLE`, at most
    `max_length` (id rows: inputs, target ids, tag ids)."""
    if structure is None:
        return None
    if isinstance(structure, (tuple, list)):
        return tuple(_pad_id_rows(item, pad_id, max_length) for item in structure)
    array = np.asarray(structure)
    if array.ndim != 2 or array.dtype.kind not in ("i", "u"):
        return array
    length = -(-array.shape[1] // PAD_MULTIPLE) * PAD_MULTIPLE
    if max_length is not None:
        length = max(array.shape[1], min(length, max_length))
    if length == array.shape[1]:
        return array
    padded = np.full((array.shape[0], length), pad_id, dtype=array.dtype)
    padded[:, : array.shape[1]] = array
    return padded
