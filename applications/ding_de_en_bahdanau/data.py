"""The recipe's data: the auxiliary corpora, their metadata lines, tagged training batches."""

import numpy as np

from keras_rnnattn.datasets import (
    LengthBucketedBatches,
    load_ding_de_en_alternatives,
    load_ding_de_en_lexicon,
    load_libreoffice_help_de_en,
)


class TaggedBatches(LengthBucketedBatches):
    """The translator's batches: `((source, target_in), target_out)` of pairs of
    similar length, source and target padded to one bucket length (a multiple
    of 8 tokens); with `target_multiple`, the source to its own multiple of 8
    and the target to its own multiple of `target_multiple` (fewer padded
    decoder steps, more shapes to compile).

    For training (`shuffle=True`) the batch order is reshuffled every epoch
    and the last partial batch (the longest pairs, fewer than `batch_size`) is
    left out, so every batch has the same size. With `extra` pairs (the
    dictionary's words and phrases), each epoch adds a fresh random sample of
    `extra_per_epoch` of them to `pairs`.

    With `tag_id`, the sources of `extra` and of the last `num_tagged` of
    `pairs` start with that id: a tag that tells data other than the Ding
    sentences apart (Kobus et al. 2017; Caswell et al. 2019). Translation
    sources are never tagged, so the model translates in the sentences' style.

    With `bpe_dropout`, every epoch encodes its pairs afresh with that
    BPE-dropout on both sides (Provilkov et al. 2020): the model sees many
    segmentations of each word.
    """

    def __init__(
        self,
        model,
        pairs,
        batch_size,
        seed,
        shuffle=True,
        extra=(),
        extra_per_epoch=0,
        num_tagged=0,
        tag_id=None,
        bpe_dropout=0.0,
        target_multiple=None,
    ):
        self.model = model
        self.pairs = list(pairs) + list(extra)
        self.n_main = len(self.pairs) - len(extra)
        self.first_tagged = self.n_main - num_tagged if tag_id is not None else None
        self.tag_id = tag_id
        self.bpe_dropout = bpe_dropout
        self.extra_per_epoch = min(extra_per_epoch, len(extra))
        per_epoch = bool(self.extra_per_epoch or bpe_dropout)
        super().__init__(
            *((None, None) if per_epoch else self._encode_epoch(None)),
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            # (source, target_in, target_out)
            pad_to_multiple_of=(8, target_multiple, target_multiple)
            if target_multiple
            else 8,
            drop_remainder=shuffle,
            encode_fn=self._encode_epoch if per_epoch else None,
        )

    def _encode_epoch(self, rng):
        """`((source, target_in), target_out)` of this epoch's pairs: every pair
        of `pairs` and, with `extra_per_epoch`, a fresh sample of `extra`."""
        rows = np.arange(self.n_main)
        if self.extra_per_epoch:
            extra = self.n_main + rng.choice(
                len(self.pairs) - self.n_main, self.extra_per_epoch, replace=False
            )
            rows = np.concatenate([rows, extra])
        source, target_in, target_out = self._encode(rows)
        return (source, target_in), target_out

    def _encode(self, rows):
        """Source and target arrays of `pairs[rows]`, tagged as asked."""
        tokenizers = (self.model.source_tokenizer, self.model.target_tokenizer)
        for tokenizer in tokenizers:
            tokenizer.dropout = self.bpe_dropout
        try:
            (source, target_in), target_out = self.model.encode_pairs(
                [self.pairs[i][0] for i in rows], [self.pairs[i][1] for i in rows]
            )
        finally:
            for tokenizer in tokenizers:
                tokenizer.dropout = 0.0
        if self.first_tagged is not None:
            tagged = rows >= self.first_tagged  # (N,)
            if tagged.any():
                shifted = np.pad(source, ((0, 0), (1, 0)))  # (N, S + 1)
                shifted[:, 0] = self.tag_id
                source = np.where(
                    tagged[:, None], shifted, np.pad(source, ((0, 0), (0, 1)))
                )
        return source, target_in, target_out

    # The current epoch's arrays, unpadded, by name.
    @property
    def source(self):
        return self.data[0][0]  # (N, S)

    @property
    def target_in(self):
        return self.data[0][1]  # (N, T)

    @property
    def target_out(self):
        return self.data[1]  # (N, T)

    @property
    def source_lengths(self):
        return self.lengths[0]  # (N,)

    @property
    def target_lengths(self):
        return self.lengths[2]  # (N,)


def load_auxiliary_data(args, val_pairs, test_pairs):
    """`(extra_pairs, lexicon)` as `--extra-data` and `--lexicon` ask."""
    extra_pairs = []
    if args.extra_data == "alternatives":
        # No side equals a side of any canonical pair (the loader's rule).
        extra_pairs = load_ding_de_en_alternatives()
        if args.quick:
            extra_pairs = extra_pairs[:200]
        print(f"extra data: {len(extra_pairs):,} Ding alternatives", flush=True)
    elif args.extra_data == "libreoffice":
        extra_pairs = load_libreoffice_help_de_en("train")
        # No English side of the Ding validation or test split in training.
        held_out = {en for _, en in val_pairs + test_pairs}
        extra_pairs = [p for p in extra_pairs if p[1] not in held_out]
        if args.quick:
            extra_pairs = extra_pairs[:200]
        print(f"extra data: {len(extra_pairs):,} LibreOffice help pairs", flush=True)

    lexicon = []
    if args.lexicon:
        lexicon = load_ding_de_en_lexicon()
        if args.quick:
            lexicon = lexicon[:1000]
        print(f"lexicon: {len(lexicon):,} pairs, {args.lexicon:,} a epoch", flush=True)
    return extra_pairs, lexicon


def describe_data(args, extra_pairs, lexicon):
    """The metadata's `data` and `data_license` lines."""
    data = (
        "Ding de-en example sentences (Debian trans-de-en 1.9-6), 16,570 "
        "pairs; canonical split default_rng(1234): test 1000, validation "
        "500, train 15,070."
        + (
            f" Each epoch also {args.lexicon:,} random pairs of the "
            f"dictionary's other {len(lexicon):,} words and phrases "
            "(load_ding_de_en_lexicon; no side equals a sentence's)."
            if args.lexicon
            else ""
        )
        + (
            f" Every epoch also the dictionary's {len(extra_pairs):,} example "
            "sentences written with '/' alternatives, the first of each "
            "(load_ding_de_en_alternatives; no side equals a sentence's)."
            if args.extra_data == "alternatives"
            else ""
        )
        + (
            f" Every epoch also the {len(extra_pairs):,} train pairs of the "
            "LibreOffice help de/en (load_libreoffice_help_de_en, MPL-2.0)."
            if args.extra_data == "libreoffice"
            else ""
        )
        + (
            " The sources of all but the Ding sentences start with a tag "
            "(the source bos id)."
            if args.tag and (lexicon or extra_pairs)
            else ""
        )
    )
    license = "GPL-2+ (the corpus is not shipped; the weights are derived from it)" + (
        "; LibreOffice help: MPL-2.0" if args.extra_data == "libreoffice" else ""
    )
    return data, license
