"""Trains the `ding_de_en_bahdanau` preset: German→English, BiGRU + Bahdanau attention.

Data: the example sentences of the Ding dictionary (Debian `trans-de-en`,
GPL-2+, read from the package, never shipped), with the canonical split of
`keras_rnnattn.datasets.load_ding_de_en` (test: 1000, validation: 500, train:
15,070). Each epoch also draws `--lexicon` pairs (default 15,000) afresh from
the dictionary's other words and phrases (`load_ding_de_en_lexicon`; none
shares a side with a canonical sentence pair). Subwords: one BPE tokenizer per
side, learned on the training sentences, so every word can be spelled and no
output holds an unknown-token mark.
Model: BiGRU encoder (192 per direction), GRU decoder (192) with Bahdanau
attention and input feeding, and in the softmax layer the lexical model and
the fixnorm output layer (r = 3.5) of Nguyen & Chiang (2018).
Training: cross-entropy with label smoothing 0.1, Adam with an exponential
moving average of the weights (momentum 0.999): the average is what is
validated, early-stopped and shipped. `--members 2` (the default)
trains two such translators at once from seeds `--seed` and `--seed + 1`, each
in its own process pinned to one CPU core (this same script with `--members
1`), and ships them as one `TranslatorEnsemble` (the mean of their next-token
probabilities) with float16 weights. Evaluation: sacrebleu BLEU and chrF on the
test split, cased and detokenized, greedy and beam 4 with the GNMT length
penalty that scores best on the validation split.

    python applications/ding_de_en_bahdanau/train.py                    # the preset
    python applications/ding_de_en_bahdanau/train.py --attention none   # baseline
    python applications/ding_de_en_bahdanau/train.py --members 1        # one translator
    python applications/ding_de_en_bahdanau/train.py --lexicon 0        # sentences only
    python applications/ding_de_en_bahdanau/train.py --no-lexical-model
    python applications/ding_de_en_bahdanau/train.py --extra-data alternatives
    python applications/ding_de_en_bahdanau/train.py --extra-data libreoffice
    python applications/ding_de_en_bahdanau/train.py --tag      # tagged lexicon
    python applications/ding_de_en_bahdanau/train.py --schedule linear --epochs 14
    python applications/ding_de_en_bahdanau/train.py --ema 0   # no weight averaging
    python applications/ding_de_en_bahdanau/train.py --units 256 --embedding-dim 256 --fixnorm 0 --ema 0  # the previous recipe
    python applications/ding_de_en_bahdanau/train.py --quick            # smoke run
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import keras
import numpy as np

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.datasets import (
    DatasetNotFoundError,
    load_ding_de_en,
    load_ding_de_en_alternatives,
    load_ding_de_en_lexicon,
    load_libreoffice_help_de_en,
)
from keras_rnnattn.metrics import bleu, chrf
from keras_rnnattn.models import Translator, TranslatorEnsemble
from keras_rnnattn.text import BpeTokenizer

NAME = "ding_de_en_bahdanau"
SLICE = 20  # the test slice whose greedy chrF and BLEU are stored for the tests
PROBE_TEXTS = [
    "Das Kind entwickelt sich normal.",
    "Ich habe keine Zeit.",
    "Wo ist der Bahnhof?",
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="default saved_models/<name>")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument(
        "--attention",
        default="bahdanau",
        choices=[
            "bahdanau",
            "luong_dot",
            "luong_general",
            "luong_concat",
            "luong_location",
            "none",
        ],
    )
    parser.add_argument(
        "--bpe-size", type=int, default=2000, help="per side (with --joint-bpe: in all)"
    )
    parser.add_argument(
        "--joint-bpe",
        action="store_true",
        help="one BPE vocabulary learned on both languages' training sentences "
        "(Sennrich et al. 2016), the same tokenizer for source and target",
    )
    parser.add_argument(
        "--share-embeddings",
        action="store_true",
        help="one embedding for source and target tokens (needs --joint-bpe; "
        "Translator(share_embeddings=True))",
    )
    parser.add_argument(
        "--share-decoder-embeddings",
        action="store_true",
        help="the target embedding is the output layer's weights (Press & Wolf "
        "2017; Translator(share_decoder_embeddings=True))",
    )
    parser.add_argument(
        "--fixnorm",
        type=float,
        default=3.5,
        help="the output layer's readout parts and weight vectors at this norm "
        "(Nguyen & Chiang 2018's fixnorm, who use 3.5; Translator(fixnorm=...)); "
        "0: a plain output layer",
    )
    parser.add_argument(
        "--ema",
        type=float,
        default=0.999,
        help="keep an exponential moving average of the weights with this "
        "momentum (Polyak averaging; Adam(use_ema=True)), validate it and ship "
        "it; 0: off",
    )
    parser.add_argument("--embedding-dim", type=int, default=192)
    parser.add_argument("--units", type=int, default=192)
    parser.add_argument(
        "--encoder-units",
        type=int,
        default=None,
        help="per direction (default: --units); --units / 2 gives memory of the "
        "decoder's size, as Luong's dot score needs",
    )
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument(
        "--word-dropout",
        type=float,
        default=0.0,
        help="share of whole input tokens dropped, source and target (0.2 "
        "lowered the validation loss but also BLEU and chrF: see the card)",
    )
    parser.add_argument(
        "--input-feeding",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the attentional output of step t-1 joins the decoder's input at "
        "step t (Luong et al. 2015); --no-input-feeding runs the attention once "
        "over all decoder states, outside the recurrent loop (faster steps)",
    )
    parser.add_argument(
        "--lexical-model",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the lexical model of Nguyen & Chiang (2018): attention-weighted "
        "source embeddings join the softmax layer (Translator(lexical_model=True)); "
        "off with --attention none",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--target-multiple",
        type=int,
        default=None,
        help="pad each batch's targets to their own multiple of this (and "
        "sources to theirs, of 8) instead of both to the longer side's "
        "multiple of 8: 26%% fewer padded decoder steps with 4, 39 batch "
        "shapes instead of 8",
    )
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument(
        "--label-smoothing",
        type=float,
        default=0.1,
        help="of the training loss (validation loss too; test perplexity without)",
    )
    parser.add_argument(
        "--schedule",
        choices=("budget", "plateau", "linear"),
        default="budget",
        help="learning rate: `budget`, linear decay to almost zero over the "
        "epochs that fit in --time-budget (TimeBudget(decay_learning_rate=True), "
        "Li et al. 2020); `plateau`, halved whenever the validation loss does "
        "not improve (the recipe before 25 November); `linear`, the same decay "
        "over a fixed --epochs (for a host whose speed is known)",
    )
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=40.0, help="training minutes at most"
    )
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=None,
        help="GNMT α of the beam; default: the best of 0, 0.6, 1, 1.2, 1.4 on validation",
    )
    parser.add_argument(
        "--extra-data",
        choices=("none", "alternatives", "libreoffice"),
        default="none",
        help="more German-English sentences in every epoch: `alternatives`, "
        "the dictionary's 1,390 example sentences written with '/' alternatives "
        "(load_ding_de_en_alternatives, in domain); `libreoffice`, the train "
        "split of load_libreoffice_help_de_en (13,614 pairs of the LibreOffice "
        "help, out of domain)",
    )
    parser.add_argument(
        "--lexicon",
        type=int,
        default=15000,
        help="dictionary words and phrases added to each epoch (a fresh random "
        "sample of `load_ding_de_en_lexicon()`; 0: sentences only)",
    )
    parser.add_argument(
        "--tag",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="start the source of every lexicon and LibreOffice pair with a tag "
        "(the source tokenizer's bos id, unused otherwise), so the model tells "
        "them from the Ding sentences it is evaluated on",
    )
    parser.add_argument(
        "--bpe-dropout",
        type=float,
        default=0.0,
        help="BPE-dropout of the training pairs, both sides, fresh every epoch "
        "(Provilkov et al. 2020); validation and test are encoded without it",
    )
    parser.add_argument(
        "--members",
        type=int,
        default=2,
        help="translators trained side by side (one process and one CPU each, "
        "seeds --seed, --seed + 1, ...) and shipped as one TranslatorEnsemble; "
        "1 trains a single Translator",
    )
    parser.add_argument(
        "--members-dir",
        default=None,
        help="where the members' presets, logs and shared JAX compilation cache "
        "go (default: a new temporary folder); a member whose preset is already "
        "there is reused",
    )
    args = parser.parse_args(argv)
    if args.members < 1:
        parser.error(f"--members must be at least 1, not {args.members}")
    if args.target_multiple is not None and args.target_multiple < 1:
        parser.error(
            f"--target-multiple must be at least 1, not {args.target_multiple}"
        )
    if args.fixnorm is not None and args.fixnorm < 0:
        parser.error(f"--fixnorm must be positive (or 0: off), not {args.fixnorm}")
    args.fixnorm = args.fixnorm or None  # 0: a plain output layer
    if args.ema is not None and not 0 <= args.ema < 1:
        parser.error(f"--ema must be in [0, 1) (0: off), not {args.ema}")
    args.ema = args.ema or None
    if args.share_embeddings and not args.joint_bpe:
        parser.error("--share-embeddings needs one vocabulary: add --joint-bpe")
    if args.out is None:
        name = NAME if args.attention == "bahdanau" else f"ding_de_en_{args.attention}"
        args.out = os.path.join("saved_models", name)
        if args.quick:
            args.out = os.path.join(tempfile.mkdtemp(), NAME)
    if args.members > 1 and args.members_dir is None:
        args.members_dir = tempfile.mkdtemp(prefix=os.path.basename(args.out) + "_")
    if args.quick:
        args.bpe_size = 200
        args.embedding_dim = 16
        args.units = 16
        args.epochs = 1
    return args


class Batches(keras.utils.PyDataset):
    """Batches of pairs of similar length, source and target padded to one
    bucket length (a multiple of 8 tokens); with `target_multiple`, the source
    to its own multiple of 8 and the target to its own multiple of
    `target_multiple` (fewer padded decoder steps, more shapes to compile).

    Few distinct shapes means few compilations (JAX compiles once per shape);
    similar lengths mean little padding. For training (`shuffle=True`) the
    batch order is reshuffled every epoch and the last partial batch (the
    longest pairs, fewer than `batch_size`) is left out, so every batch has the
    same size. With `extra` pairs (the dictionary's words and phrases), each
    epoch adds a fresh random sample of `extra_per_epoch` of them to `pairs`.

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
        super().__init__()
        self.target_multiple = target_multiple
        self.model = model
        self.pairs = list(pairs) + list(extra)
        self.n_main = len(self.pairs) - len(extra)
        self.first_tagged = self.n_main - num_tagged if tag_id is not None else None
        self.tag_id = tag_id
        self.bpe_dropout = bpe_dropout
        self.extra_per_epoch = min(extra_per_epoch, len(extra))
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)
        self.shuffle = shuffle
        self.on_epoch_end()

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

    def _make_batches(self):
        rows = np.arange(self.n_main)
        if self.extra_per_epoch:
            extra = self.n_main + self.rng.choice(
                len(self.pairs) - self.n_main, self.extra_per_epoch, replace=False
            )
            rows = np.concatenate([rows, extra])
        self.source, self.target_in, self.target_out = self._encode(rows)
        self.source_lengths = np.sum(self.source != 0, axis=1)
        self.target_lengths = np.sum(self.target_out != 0, axis=1)
        order = np.lexsort((self.source_lengths, self.target_lengths))
        size = self.batch_size
        batches = [order[i : i + size] for i in range(0, len(order), size)]
        if self.shuffle and len(batches) > 1 and len(batches[-1]) < size:
            batches.pop()
        return batches

    def __len__(self):
        return len(self.batches)

    def on_epoch_end(self):
        if self.extra_per_epoch or self.bpe_dropout or not hasattr(self, "batches"):
            self.batches = self._make_batches()
        self.order = np.arange(len(self.batches))
        if self.shuffle:
            self.order = self.rng.permutation(len(self.batches))

    def __getitem__(self, index):
        rows = self.batches[self.order[index]]
        source_max = self.source_lengths[rows].max()
        target_max = self.target_lengths[rows].max()
        if self.target_multiple:  # each side to its own length
            s = _round_up(source_max)
            t = _round_up(target_max, self.target_multiple)
        else:
            s = t = _round_up(max(source_max, target_max))
        return (
            (_fit(self.source[rows], s), _fit(self.target_in[rows], t)),
            _fit(self.target_out[rows], t),
        )


def _round_up(n, multiple=8):
    return int(-(-int(n) // multiple) * multiple)


def _fit(ids, length):
    """Cuts or right-pads (with 0) an id matrix to `length` columns."""
    if ids.shape[1] >= length:
        return ids[:, :length]
    return np.pad(ids, ((0, 0), (0, length - ids.shape[1])))


def translate_all(model, texts, beam_size, length_penalty=0.0, batch_size=250):
    """Translations of many texts, batched by source length (fewer shapes)."""
    order = np.argsort([len(model.source_tokenizer.encode(t)) for t in texts])
    out = [None] * len(texts)
    for i in range(0, len(order), batch_size):
        rows = order[i : i + batch_size]
        for row, translation in zip(
            rows,
            model.translate(
                [texts[r] for r in rows],
                beam_size=beam_size,
                length_penalty=length_penalty,
            ),
        ):
            out[row] = translation
    return out


LENGTH_BUCKETS = ((1, 5), (6, 8), (9, 12), (13, 20), (21, 200))
LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.2, 1.4)  # α tried on the validation split


def bleu_by_length(hypotheses, pairs):
    """Corpus BLEU and chrF per bucket of source length in words (Bahdanau et
    al. 2014, Fig. 2): `{"6-8": {"sentences": n, "bleu": .., "chrf": ..}}`."""
    table = {}
    for low, high in LENGTH_BUCKETS:
        rows = [i for i, (de, _) in enumerate(pairs) if low <= len(de.split()) <= high]
        if rows:
            hyps = [hypotheses[i] for i in rows]
            refs = [pairs[i][1] for i in rows]
            table[f"{low}-{high}"] = {
                "sentences": len(rows),
                "bleu": bleu(hyps, refs),
                "chrf": chrf(hyps, refs),
            }
    return table


def pick_length_penalty(model, pairs, beam_size, choices=LENGTH_PENALTIES):
    """The GNMT length penalty α with the best BLEU + chrF on `pairs`."""
    sources = [de for de, _ in pairs]
    references = [en for _, en in pairs]
    scores = {}
    for alpha in choices:
        hypotheses = translate_all(model, sources, beam_size, alpha)
        scores[alpha] = bleu(hypotheses, references) + chrf(hypotheses, references)
        print(
            f"validation, beam {beam_size}, α={alpha}: BLEU + chrF {scores[alpha]:.2f}"
        )
    return max(choices, key=scores.get), scores


def evaluate(model, pairs, beam_size, length_penalty=0.0):
    sources = [de for de, _ in pairs]
    references = [en for _, en in pairs]
    start = time.time()
    hypotheses = translate_all(model, sources, beam_size, length_penalty)
    seconds = time.time() - start
    unk = model.target_tokenizer.vocabulary.id_to_token(model.target_tokenizer.unk_id)
    return {
        "bleu": bleu(hypotheses, references),
        "chrf": chrf(hypotheses, references),
        "unk_outputs": sum(unk in h for h in hypotheses),
        "sentences_per_second": len(pairs) / seconds,
        "by_source_length": bleu_by_length(hypotheses, pairs),
    }, hypotheses


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


def describe_model(args):
    """The metadata's `description` of one translator of this recipe."""
    return (
        f"German→English translator: BiGRU encoder ({args.units} per "
        f"direction), GRU decoder ({args.units}) with {args.attention} "
        f"attention"
        + (" and input feeding" if args.input_feeding else " (no input feeding)")
        + (
            " and the lexical model"
            if args.lexical_model and args.attention != "none"
            else ""
        )
        + (
            f", one BPE vocabulary of {args.bpe_size} for both languages"
            if args.joint_bpe
            else f", BPE {args.bpe_size} per side"
        )
        + (", source and target embeddings shared" if args.share_embeddings else "")
        + (
            ", the target embedding as the output layer's weights"
            if args.share_decoder_embeddings
            else ""
        )
        + (f", fixnorm {args.fixnorm} output layer" if args.fixnorm else "")
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + (f" (BPE-dropout {args.bpe_dropout} in training)" if args.bpe_dropout else "")
        + (
            f", label smoothing {args.label_smoothing}."
            if args.label_smoothing
            else "."
        )
    )


def training_callbacks(args):
    """`(budget, stop, callbacks)`: the --time-budget clock, early stopping on the
    validation loss (best weights kept) and the learning-rate schedule that
    `--schedule` names, in the order `fit` runs them."""
    budget = TimeBudget(args.time_budget, decay_learning_rate=args.schedule == "budget")
    stop = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=args.patience, restore_best_weights=True
    )
    callbacks = [budget, stop]
    if args.ema:
        # From each epoch's end on, the model holds the averaged weights: they
        # are validated, kept by early stopping and shipped.
        callbacks.insert(1, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    if args.schedule == "linear":
        # Epoch k of --epochs trains at learning_rate * (epochs - k) / epochs.
        callbacks.insert(
            1,
            keras.callbacks.LearningRateScheduler(
                lambda epoch, rate: (
                    args.learning_rate * (args.epochs - epoch) / args.epochs
                )
            ),
        )
    if args.schedule == "plateau":
        # Halve the learning rate whenever the validation loss stops improving.
        callbacks.insert(
            1,
            keras.callbacks.ReduceLROnPlateau(
                monitor="val_loss", factor=0.5, patience=1, min_lr=1e-5
            ),
        )
    return budget, stop, callbacks


def train_one(args, train_pairs, val_pairs, test_pairs):
    """Trains one Translator; returns `(model, training metrics, data, license)`."""
    extra_pairs, lexicon = load_auxiliary_data(args, val_pairs, test_pairs)
    keras.utils.set_random_seed(args.seed)
    start = time.time()
    # Subwords are learned on the training sentences alone (the lexicon's
    # rare technical words would take merges the sentences need).
    if args.joint_bpe:
        source_tokenizer = target_tokenizer = BpeTokenizer(
            max_vocab=args.bpe_size, seed=args.seed
        ).fit([de for de, _ in train_pairs] + [en for _, en in train_pairs])
    else:
        source_tokenizer = BpeTokenizer(max_vocab=args.bpe_size, seed=args.seed).fit(
            [de for de, _ in train_pairs]
        )
        target_tokenizer = BpeTokenizer(max_vocab=args.bpe_size, seed=args.seed).fit(
            [en for _, en in train_pairs]
        )
    print(f"BPE learned in {time.time() - start:.1f} s", flush=True)
    model = Translator(
        source_tokenizer,
        target_tokenizer,
        embedding_dim=args.embedding_dim,
        units=args.units,
        encoder_units=args.encoder_units,
        bidirectional=True,
        cell="gru",
        attention=args.attention,
        input_feeding=args.input_feeding,
        dropout=args.dropout,
        word_dropout=args.word_dropout,
        lexical_model=args.lexical_model and args.attention != "none",
        share_embeddings=args.share_embeddings,
        share_decoder_embeddings=args.share_decoder_embeddings,
        fixnorm=args.fixnorm,
        max_source_length=128,
        max_target_length=128,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(
            args.learning_rate,
            clipnorm=5.0,
            use_ema=args.ema is not None,
            ema_momentum=args.ema or 0.99,
        ),
        label_smoothing=args.label_smoothing,
    )
    train_data = Batches(
        model,
        train_pairs + extra_pairs,
        args.batch_size,
        args.seed,
        extra=lexicon,
        extra_per_epoch=args.lexicon,
        # The alternatives are Ding sentences too: only out-of-domain text is tagged.
        num_tagged=len(extra_pairs) if args.extra_data == "libreoffice" else 0,
        tag_id=source_tokenizer.bos_id if args.tag else None,
        bpe_dropout=args.bpe_dropout,
        target_multiple=args.target_multiple,
    )
    val_data = Batches(model, val_pairs, args.batch_size, args.seed, shuffle=False)
    budget, stop, callbacks = training_callbacks(args)
    start = time.time()
    history = model.fit(
        train_data,
        validation_data=val_data,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=2,
    )
    train_seconds = time.time() - start
    if budget.stopped and stop.best_weights is not None:
        # Stopped by the clock: keep the epoch with the best validation loss
        # (Keras validates the cut-short last epoch too).
        model.set_weights(stop.best_weights)
    metrics = {
        "epochs_run": len(history.history["loss"]),
        # With label smoothing, of the smoothed loss.
        "best_val_loss": float(min(history.history["val_loss"])),
        "train_seconds": round(train_seconds, 1),
        "stopped_by_time_budget": budget.stopped,
        "learning_rate_schedule": args.schedule,
    }
    return (model, metrics) + describe_data(args, extra_pairs, lexicon)


def _member_argv(args, argv, index):
    """The command line of member `index` (0-based): this run's own options but
    the members' and output's, one translator, its seed and folder."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own = {"--members": 1, "--members-dir": 1, "--out": 1, "--seed": 1}
    kept, skip = [], 0
    for item in argv:
        if skip:
            skip -= 1
            continue
        name = item.split("=")[0]
        if name in own:
            skip = 0 if "=" in item else own[name]
            continue
        kept.append(item)
    folder = os.path.join(args.members_dir, f"member_{index + 1}")
    return kept + ["--members", "1", "--seed", str(args.seed + index), "--out", folder]


def _member_env(members_dir):
    """Environment of a member process: every library on one thread, and one
    JAX compilation cache in `members_dir` for all members (a batch shape one
    member has compiled, another loads in a second or two instead of compiling
    it again: about 12 s a shape on one core). `JAX_COMPILATION_CACHE_DIR`, if
    set, is kept (a cache shared by several runs)."""
    env = dict(os.environ)
    env.setdefault(
        "JAX_COMPILATION_CACHE_DIR", os.path.join(members_dir, "compilation_cache")
    )
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        env[name] = "1"
    env["TF_NUM_INTEROP_THREADS"] = "1"
    env["XLA_FLAGS"] = (
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    env["PYTHONUNBUFFERED"] = "1"
    return env


def train_members(args, argv):
    """Trains `args.members` translators side by side, one process and one CPU
    each (each seeded `args.seed + i`), and returns them as one
    `TranslatorEnsemble` with its training metrics, data and licence.

    A member whose folder in `--members-dir` already holds a preset is reused.
    """
    os.makedirs(args.members_dir, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    waiting = list(range(args.members))
    running = {}
    start = time.time()
    while waiting or running:
        while waiting and len(running) < max(1, len(cpus)):
            index = waiting.pop(0)
            member_argv = _member_argv(args, argv, index)
            folder = member_argv[-1]
            if os.path.isfile(os.path.join(folder, "metadata.json")):
                print(f"member {index + 1}: reusing the preset in {folder}", flush=True)
                continue
            busy = {cpu for _, _, cpu in running.values()}
            cpu = next((c for c in cpus if c not in busy), None)
            log = open(os.path.join(args.members_dir, f"member_{index + 1}.log"), "w")
            process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), *member_argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_member_env(args.members_dir),
                # Thread settings alone do not keep XLA to one core: pin it.
                preexec_fn=(lambda c=cpu: os.sched_setaffinity(0, {c}))
                if cpu is not None
                else None,
            )
            print(
                f"member {index + 1}: training on CPU {cpu}, log {log.name}",
                flush=True,
            )
            running[index] = (process, log, cpu)
        time.sleep(1 if args.quick else 30)
        for index, (process, log, _) in list(running.items()):
            if process.poll() is None:
                continue
            log.close()
            del running[index]
            if process.returncode != 0:
                with open(log.name) as f:
                    tail = f.read()[-2000:]
                raise RuntimeError(
                    f"member {index + 1} failed (exit {process.returncode}); the "
                    f"end of {log.name}:\n{tail}"
                )
            print(
                f"member {index + 1}: done after {(time.time() - start) / 60:.1f} min",
                flush=True,
            )

    members, member_metadata = [], []
    for index in range(args.members):
        folder = _member_argv(args, argv, index)[-1]
        members.append(Translator.from_preset(folder))
        with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as f:
            member_metadata.append(json.load(f))
    model = TranslatorEnsemble(members)
    # The preset stores float16 weights (two translators fit the size limit):
    # round them now, so every score below is of the weights shipped.
    for variable in model.weights:
        if "float" in str(variable.dtype):
            value = keras.ops.convert_to_numpy(variable)
            variable.assign(value.astype("float16").astype(value.dtype))
    runs = [m["metrics"] for m in member_metadata]
    metrics = {
        "epochs_run": [r["epochs_run"] for r in runs],
        "best_val_loss": [r["best_val_loss"] for r in runs],
        # Side by side: the slowest member's training time.
        "train_seconds": max(r["train_seconds"] for r in runs),
        "stopped_by_time_budget": any(r["stopped_by_time_budget"] for r in runs),
        "members": [
            {
                "command": m["command"],
                "seed": m["seed"],
                **{
                    key: m["metrics"][key]
                    for key in m["metrics"]
                    if key.startswith("test_")
                    and not key.endswith(("by_source_length", "per_second"))
                },
                "beam_length_penalty": m["metrics"]["beam_length_penalty"],
            }
            for m in member_metadata
        ],
    }
    first = member_metadata[0]
    return model, metrics, first["data"], first["data_license"]


def main(argv=None):
    args = parse_args(argv)
    try:
        train_pairs = load_ding_de_en("train")
        val_pairs = load_ding_de_en("validation")
        test_pairs = load_ding_de_en("test")
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    if args.quick:
        train_pairs, val_pairs, test_pairs = (
            train_pairs[:200],
            val_pairs[:20],
            test_pairs[:SLICE],
        )
    if args.members > 1:
        model, metrics, data, data_license = train_members(args, argv)
        description = (
            f"An ensemble of {args.members} translators of one recipe, trained "
            f"side by side from seeds {args.seed} to {args.seed + args.members - 1} "
            "(TranslatorEnsemble: the mean of their next-token probabilities), "
            "weights stored as float16. Each: " + describe_model(args)
        )
    else:
        try:
            model, metrics, data, data_license = train_one(
                args, train_pairs, val_pairs, test_pairs
            )
        except DatasetNotFoundError as error:
            print(error, file=sys.stderr)
            return 2
        description = describe_model(args)

    test_data = Batches(model, test_pairs, args.batch_size, args.seed, shuffle=False)
    model.compile()  # the plain cross-entropy, for the perplexity
    test_loss = float(model.evaluate(test_data, verbose=0, return_dict=True)["loss"])
    # Masked cross-entropy per target subword (end token included).
    metrics["test_loss"] = test_loss
    metrics["test_perplexity"] = float(np.exp(test_loss))
    metrics["parameters"] = int(model.count_params())
    results = {}
    alpha = args.length_penalty
    if alpha is None:
        alpha, tried = pick_length_penalty(model, val_pairs, args.beam_size)
        metrics["validation_length_penalty_bleu_plus_chrf"] = {
            str(a): v for a, v in tried.items()
        }
    metrics["beam_length_penalty"] = alpha
    for label, beam, penalty in (
        ("greedy", 1, 0.0),
        (f"beam{args.beam_size}", args.beam_size, alpha),
    ):
        scores, hypotheses = evaluate(model, test_pairs, beam, penalty)
        results[label] = hypotheses
        for key, value in scores.items():
            metrics[f"test_{label}_{key}"] = value
        print(f"{label}: {json.dumps(scores)}", flush=True)

    slice_pairs = test_pairs[:SLICE]
    # One batch, as the preset tests translate it (each row's length limit is
    # its own, so this also equals translating each text alone).
    slice_greedy = model.translate([de for de, _ in slice_pairs])
    command = "python applications/ding_de_en_bahdanau/train.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    metadata = {
        "description": description,
        "data": data,
        "data_license": data_license,
        "command": command.strip(),
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "metric_notes": "sacrebleu corpus BLEU and chrF, cased, detokenized output "
        "against the raw English references",
        "probe_texts": PROBE_TEXTS,
        "probe_greedy": model.translate(PROBE_TEXTS),
        # Scores only: the corpus is GPL-2+, so no sentence of it is stored.
        "test_slice_greedy_chrf": chrf(slice_greedy, [en for _, en in slice_pairs]),
        "test_slice_greedy_bleu": bleu(slice_greedy, [en for _, en in slice_pairs]),
    }
    folder = model.save_to_preset(
        args.out,
        metadata=metadata,
        weights_dtype="float16" if args.members > 1 else None,
    )

    beam = f"beam{args.beam_size}"
    print("\n| preset | attention | decoding | BLEU | chrF | unk outputs | sent/s |")
    print("|---|---|---|---|---|---|---|")
    for label in ("greedy", beam):
        print(
            f"| {os.path.basename(folder)} | {args.attention} | {label} | "
            f"{metrics[f'test_{label}_bleu']:.1f} | {metrics[f'test_{label}_chrf']:.1f} | "
            f"{metrics[f'test_{label}_unk_outputs']} | "
            f"{metrics[f'test_{label}_sentences_per_second']:.0f} |"
        )
    epochs = metrics["epochs_run"]
    print(
        f"training: {epochs} epochs, {metrics['train_seconds'] / 60:.1f} min, "
        f"{metrics['parameters']:,} parameters"
    )
    for (de, en), hyp in list(zip(test_pairs, results[beam]))[:5]:
        print(f"  DE  {de}\n  REF {en}\n  OUT {hyp}")
    print(f"preset: {folder}")
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
