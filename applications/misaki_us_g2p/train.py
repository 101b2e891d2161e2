"""Trains the `misaki_us_g2p` preset: English spelling → misaki (Kokoro) phonemes.

Data: misaki 0.9.4's American lexicons (Apache-2.0), split by word with
`keras_rnnattn.datasets.load_misaki_lexicon`: a gold word whose
`sha1(word) % 20` is 0 is test, 1 validation; training is every other gold
word and all silver words (gold words with part-of-speech variants train with
their DEFAULT pronunciation).
Model: the `cmudict_g2p` recipe's Translator over characters (case kept: the
lexicon holds names) into misaki's symbols, one token per symbol, stress marks
included: BiGRU encoder, GRU decoder with Bahdanau attention and input feeding.
Training: cross-entropy, Adam with an exponential moving average of the
weights, the learning rate decayed linearly over the epochs that fit in
`--time-budget`.
Evaluation on the test words: word error rate (exact match), the same without
stress marks, and the symbol error rate (edit distance over symbols without
stress marks, divided by the gold length), greedy and beam search.

    python applications/misaki_us_g2p/train.py                    # the preset
    python applications/misaki_us_g2p/train.py --attention none   # baseline
    python applications/misaki_us_g2p/train.py --quick            # smoke run
"""

import os
import sys
from pathlib import Path

import keras

from keras_rnnattn.datasets import (
    MISAKI_SYMBOLS,
    load_misaki_lexicon,
)
from keras_rnnattn.metrics import phoneme_error_rate, word_error_rate
from keras_rnnattn.text import CharTokenizer
from keras_rnnattn.training import (
    round_to_float16,
)

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications import common, g2p  # noqa: E402

NAME = "misaki_us_g2p"
# Each dialect's preset and what its metadata says of it.
DIALECT_NAMES = {"us": NAME, "gb": "misaki_gb_g2p"}
DIALECT_WORDS = {"us": "American", "gb": "British"}
SLICE = 50  # the test words whose greedy outputs are pinned by the preset tests
PROBE_WORDS = ["Keras", "attention", "TensorFlow", "Kokoro", "misaki", "zoo's"]
STRESS = str.maketrans("", "", "ˈˌ")
# The test metrics of each decoding, in the printed table's order.
KEYS = ("wer", "wer_without_stress", "ser", "words_per_second")


def parse_args(argv=None, dialect="us"):
    return g2p.finish_args(
        g2p.argument_parser(__doc__, time_budget=50.0).parse_args(argv),
        DIALECT_NAMES[dialect],
    )


def symbols(phonemes, stress=True):
    """misaki phonemes as space-separated symbols, for the token metrics."""
    return " ".join(phonemes if stress else phonemes.translate(STRESS))


def error_rates(outputs, references):
    """The test metrics of misaki phoneme strings (this recipe's and the peers')."""
    return {
        "wer": round(
            word_error_rate(
                [symbols(o) for o in outputs], [symbols(r) for r in references]
            ),
            2,
        ),
        "wer_without_stress": round(
            word_error_rate(
                [symbols(o, False) for o in outputs],
                [symbols(r, False) for r in references],
            ),
            2,
        ),
        "ser": round(
            phoneme_error_rate(
                [symbols(o, False) for o in outputs],
                [symbols(r, False) for r in references],
            ),
            2,
        ),
    }


def train(args, train_data, val_data, dialect="us"):
    """Builds and trains the Translator; returns `(model, training metrics)`."""
    source_tokenizer = CharTokenizer(fold_letters=True).fit(train_data[0])
    target_tokenizer = CharTokenizer().fit(train_data[1])
    extra = set(target_tokenizer.vocabulary.tokens[4:]) - MISAKI_SYMBOLS[dialect]
    if extra:
        raise ValueError(
            f"Training phonemes outside misaki's {dialect.upper()} set: {sorted(extra)}"
        )
    return g2p.train_translator(
        args,
        DIALECT_NAMES[dialect],
        (source_tokenizer, target_tokenizer),
        train_data,
        val_data,
        max_lengths=(56, 64),
    )


def outside_symbols(outputs, dialect):
    """How many outputs hold a symbol outside misaki's set for `dialect`."""
    return sum(bool(set(o) - MISAKI_SYMBOLS[dialect]) for o in outputs)


@common.exits_on_missing_data
def main(argv=None, dialect="us"):
    args = parse_args(argv, dialect)
    name = DIALECT_NAMES[dialect]
    train_data, val_data, (test_words, test_phonemes) = common.load_splits(
        lambda split: load_misaki_lexicon(split, dialect=dialect)
    )
    if args.quick:
        train_data = (train_data[0][:300], train_data[1][:300])
        val_data = (val_data[0][:30], val_data[1][:30])
        test_words, test_phonemes = test_words[:SLICE], test_phonemes[:SLICE]
    model, metrics = train(args, train_data, val_data, dialect)
    round_to_float16(model)  # the weights as the preset stores them
    metrics["parameters"] = int(model.count_params())
    outputs = common.score_transcriptions(
        model,
        metrics,
        val_data,
        (test_words, test_phonemes),
        args.beam_size,
        lambda words, outputs, references: error_rates(outputs, references),
    )
    metrics["test_outputs_outside_symbols"] = outside_symbols(
        outputs["greedy"], dialect
    )
    command = common.command_line(name, argv)
    metadata = {
        "description": "English grapheme-to-phoneme converter for Kokoro: spelling "
        f"(case kept) in, misaki's {DIALECT_WORDS[dialect]} phonemes out.",
        "data": f"misaki 0.9.4's {dialect}_gold.json and {dialect}_silver.json: "
        f"{len(train_data[0]):,} "
        f"training words, {len(val_data[0]):,} validation, {len(test_words):,} test "
        "(load_misaki_lexicon's split, sha1(word) % 20).",
        "data_license": "Apache-2.0 (misaki, hexgrad)",
        "command": command,
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "probe_texts": PROBE_WORDS,
        "probe_greedy": model.translate(PROBE_WORDS),
        "test_slice_words": test_words[:SLICE],
        "test_slice_greedy": model.translate(test_words[:SLICE]),
    }
    folder = model.save_to_preset(args.out, metadata=metadata, weights_dtype="float16")
    print("\n| system | decoding | WER | WER without stress | SER | words/s |")
    print("|---|---|---|---|---|---|")
    for label in outputs:
        row = [metrics[f"test_{label}_{key}"] for key in KEYS]
        print(
            f"| {os.path.basename(folder)} | {label} | "
            + " | ".join(f"{value:.1f}" for value in row)
            + " |"
        )
    for word, ref, hyp in list(zip(test_words, test_phonemes, outputs["greedy"]))[:10]:
        print(f"  {word:16s} {hyp:24s} ref {ref}")
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
