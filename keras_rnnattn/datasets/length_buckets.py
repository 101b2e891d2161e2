"""Batches of token-id rows of similar length, padded to a few shapes: a PyDataset."""

import copy

import keras
import numpy as np

from keras_rnnattn._checks import is_int


class LengthBucketedBatches(keras.utils.PyDataset):
    """Batches of rows of similar length, each padded to a multiple of a few tokens.

    A `keras.utils.PyDataset` for `model.fit`, `evaluate` and `predict` over
    right-padded token-id matrices (id 0 is padding, as with the
    `keras_rnnattn.text` tokenizers):

    1. every row's length is its number of non-zero ids, in each array;
    2. the rows are sorted by length (by the last array's lengths, ties by the
       one before it, and so on: for `x=(source, target_in), y=target_out`, by
       target length, then source length) and cut into batches of
       `batch_size` consecutive rows, so a batch holds rows of similar length;
    3. each batch is cut or padded to its longest row rounded up to a
       multiple of `pad_to_multiple_of`: one length for all arrays (an int),
       or each array to its own multiple (a tuple, one per array: those of
       `x`, then those of `y`, in the order of `keras.tree.flatten`);
    4. with `shuffle=True` the order of the batches is drawn afresh every
       epoch from `seed` (rows stay in their buckets); without, the batches
       come in bucket order. Either way, where an epoch has batches of
       several widths, its second batch is one of other widths than its
       first: Keras on TensorFlow fixes every dimension on which a
       PyDataset's first two batches agree.

    Few distinct shapes mean few compilations (JAX and `jit_compile` compile
    once per shape); similar lengths mean little padding. With `encode_fn`
    the data is made afresh before every epoch (a fresh sample of extra
    data, BPE-dropout's fresh segmentations) and bucketed again.

    Args:
        x: an int array `(N, L)` or a tuple or list of them (the model's
            inputs), all with `N` rows; None when `encode_fn` is given.
        y: None, or an int array `(N, L)` or a tuple or list of them (the
            targets).
        batch_size: int >= 1, rows per batch.
        shuffle: bool, draw a new batch order every epoch. Defaults to `True`.
        seed: int or None, the seed of the batch order (and of the generator
            given to `encode_fn`); None draws one from the operating system.
        pad_to_multiple_of: int >= 1, or a tuple of them, one per array.
            Defaults to 8.
        drop_remainder: bool, leave out the last partial batch (the longest
            rows) when there is more than one batch, so every batch has
            `batch_size` rows. Defaults to `False`.
        encode_fn: None, or a callable `encode_fn(rng) -> (x, y)` run at the
            start and at every epoch's end; `rng` is this dataset's
            `numpy.random.Generator`, so sampling inside it repeats with
            `seed`.
        **kwargs: `workers`, `use_multiprocessing`, `max_queue_size` of
            `keras.utils.PyDataset`.

    Attributes:
        data: `(x, y)` of the current epoch, unpadded.
        lengths: list of int arrays `(N,)`, the rows' lengths in each array
            (those of `x`, then those of `y`).
        batches: list of int arrays, the rows of each batch (bucket order).
        order: int array, the batch order of this epoch.

    Example:

    >>> import numpy as np
    >>> x = np.array([[5, 6, 7, 0], [5, 0, 0, 0], [5, 6, 0, 0], [7, 0, 0, 0]])
    >>> data = LengthBucketedBatches(x, x, batch_size=2, shuffle=False,
    ...                              pad_to_multiple_of=2)
    >>> [batch_x.tolist() for batch_x, _ in data]
    [[[5, 0], [7, 0]], [[5, 6, 0, 0], [5, 6, 7, 0]]]
    """

    def __init__(
        self,
        x=None,
        y=None,
        batch_size=32,
        shuffle=True,
        seed=None,
        pad_to_multiple_of=8,
        drop_remainder=False,
        encode_fn=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if (x is None) == (encode_fn is None):
            raise ValueError(
                "LengthBucketedBatches needs either the data `x` (and `y`) or an "
                "`encode_fn` that makes it every epoch, not both nor neither. "
                f"Received: x={type(x).__name__}, encode_fn={encode_fn!r}"
            )
        if encode_fn is not None and not callable(encode_fn):
            raise ValueError(
                "`encode_fn` must be a callable `encode_fn(rng) -> (x, y)`. "
                f"Received: encode_fn={encode_fn!r}"
            )
        if not _is_positive_int(batch_size):
            raise ValueError(
                f"`batch_size` must be an int >= 1. Received: batch_size={batch_size!r}"
            )
        multiples = pad_to_multiple_of
        if not isinstance(multiples, (tuple, list)):
            multiples = [multiples]
        if not multiples or not all(_is_positive_int(m) for m in multiples):
            raise ValueError(
                "`pad_to_multiple_of` must be an int >= 1 or a tuple of them (one "
                f"per array). Received: pad_to_multiple_of={pad_to_multiple_of!r}"
            )
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.pad_to_multiple_of = pad_to_multiple_of
        self.drop_remainder = bool(drop_remainder)
        self.encode_fn = encode_fn
        self.rng = np.random.default_rng(seed)
        self._drawn_from = copy.deepcopy(self.rng.bit_generator.state)
        self._bucket(*(encode_fn(self.rng) if encode_fn else (x, y)))
        self._draw_order()

    # === Bucketing ===
    def _bucket(self, x, y):
        """Checks `(x, y)`, measures every row and cuts the sorted rows into batches."""
        if x is None:
            raise ValueError(
                "`encode_fn` must return `(x, y)` with `x` an array or a tuple of "
                "arrays. Received: x=None"
            )
        structure = (x,) if y is None else (x, y)
        arrays = [np.asarray(a) for a in keras.tree.flatten(structure)]
        rows = {a.shape[0] if a.ndim else None for a in arrays}
        if any(a.ndim != 2 for a in arrays) or len(rows) != 1:
            shapes = [a.shape for a in arrays]
            raise ValueError(
                "LengthBucketedBatches takes 2-D id arrays `(N, L)` with the same "
                f"number of rows `N`. Received: shapes {shapes}"
            )
        if isinstance(self.pad_to_multiple_of, (tuple, list)) and len(
            self.pad_to_multiple_of
        ) != len(arrays):
            raise ValueError(
                f"`pad_to_multiple_of` gives one multiple per array: {len(arrays)} "
                f"arrays here. Received: pad_to_multiple_of={self.pad_to_multiple_of!r}"
            )
        self.data = (x, y)
        self._structure = structure
        self._arrays = arrays
        self.lengths = [np.sum(a != 0, axis=1) for a in arrays]  # (N,) each
        order = np.lexsort(self.lengths)  # the last array's lengths first
        size = self.batch_size
        batches = [order[i : i + size] for i in range(0, len(order), size)]
        if self.drop_remainder and len(batches) > 1 and len(batches[-1]) < size:
            batches.pop()
        self.batches = batches

    def _draw_order(self):
        order = np.arange(len(self.batches))
        if self.shuffle:
            order = self.rng.permutation(len(self.batches))
        self.order = self._two_widths_first(order)

    def _two_widths_first(self, order):
        """`order` with, where the epoch has batches of several widths, a batch
        of other widths than the first one's in second place.

        Keras on TensorFlow builds a PyDataset's `tf.data` signature from its
        first two batches and fixes every dimension on which they agree: a
        later batch of another width would then fail. The first batch of the
        order whose widths all differ from the first batch's moves up to
        second place; the others keep their order.
        """
        if len(order) < 3:
            return order
        widths = np.array([self._widths(self.batches[b]) for b in order])  # (n, k)
        varying = np.any(widths != widths[0], axis=0)  # (k,)
        differs = np.all(widths[:, varying] != widths[0, varying], axis=1)  # (n,)
        if not varying.any() or differs[1] or not differs.any():
            return order
        j = int(np.argmax(differs))
        return np.concatenate([order[:1], order[j : j + 1], order[1:j], order[j + 1 :]])

    def _widths(self, rows):
        """The padded width of each array for a batch of `rows`."""
        longest = [int(lengths[rows].max()) for lengths in self.lengths]
        if isinstance(self.pad_to_multiple_of, (tuple, list)):  # each its own
            return [
                _round_up(n, m)
                for n, m in zip(longest, self.pad_to_multiple_of, strict=True)
            ]
        # One length for all.
        return [_round_up(max(longest), self.pad_to_multiple_of)] * len(longest)

    # === PyDataset ===
    def __len__(self):
        return len(self.batches)

    def on_epoch_end(self):
        self._drawn_from = copy.deepcopy(self.rng.bit_generator.state)
        if self.encode_fn is not None:
            self._bucket(*self.encode_fn(self.rng))
        self._draw_order()

    # === Resuming ===
    def get_state(self):
        """The coming epoch's data, as a JSON-able dict.

        The state of the generator its batch order (and `encode_fn`'s data)
        was drawn from: `set_state` draws the same epoch again, so a resumed
        training run (`keras_rnnattn.training.TrainingRun`) sees the data in
        the order an uninterrupted one would.

        Returns:
            dict.
        """
        return {"rng": copy.deepcopy(self._drawn_from)}

    def set_state(self, state):
        """Draws again the epoch that `get_state()` described.

        Args:
            state: dict, from `get_state()`.
        """
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self._drawn_from = copy.deepcopy(state["rng"])
        if self.encode_fn is not None:
            self._bucket(*self.encode_fn(self.rng))
        self._draw_order()

    def __getitem__(self, index):
        if not 0 <= index < len(self.batches):
            raise IndexError(
                f"Batch index out of range: this epoch has {len(self.batches)} "
                f"batches. Received: index={index}"
            )
        rows = self.batches[self.order[index]]
        widths = self._widths(rows)
        batch = [
            _fit(array[rows], width)
            for array, width in zip(self._arrays, widths, strict=True)
        ]
        packed = keras.tree.pack_sequence_as(self._structure, batch)
        return packed[0] if len(packed) == 1 else tuple(packed)  # x or (x, y)


def _is_positive_int(value):
    return is_int(value) and value >= 1


def _round_up(n, multiple):
    return int(-(-int(n) // multiple) * multiple)


def _fit(ids, length):
    """Cuts or right-pads (with 0) an id matrix to `length` columns."""
    if ids.shape[1] >= length:
        return ids[:, :length]
    return np.pad(ids, ((0, 0), (0, length - ids.shape[1])))
