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

import argparse
import json
import os
import sys
import tempfile
import time

import keras
import numpy as np

from keras_rnnattn.callbacks import TimeBudget
from keras_rnnattn.datasets import (
    MISAKI_SYMBOLS,
    DatasetNotFoundError,
    LengthBucketedBatches,
    load_misaki_lexicon,
)
from keras_rnnattn.layers.score_layers import TRANSLATOR_ATTENTIONS
from keras_rnnattn.metrics import phoneme_error_rate, word_error_rate
from keras_rnnattn.models import Translator
from keras_rnnattn.text import CharTokenizer

NAME = "misaki_us_g2p"
SLICE = 50  # the test words whose greedy outputs are pinned by the preset tests
PROBE_WORDS = ["Keras", "attention", "TensorFlow", "Kokoro", "misaki", "zoo's"]
STRESS = str.maketrans("", "", "ˈˌ")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="default saved_models/<name>")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument(
        "--attention", default="bahdanau", choices=TRANSLATOR_ATTENTIONS
    )
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--ema", type=float, default=0.999, help="0: off")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument(
        "--time-budget", type=float, default=50.0, help="training minutes at most"
    )
    parser.add_argument("--beam-size", type=int, default=4)
    args = parser.parse_args(argv)
    args.ema = args.ema or None
    if args.out is None:
        name = NAME if args.attention == "bahdanau" else f"{NAME}_{args.attention}"
        args.out = os.path.join("saved_models", name)
        if args.quick:
            args.out = os.path.join(tempfile.mkdtemp(), name)
    if args.quick:
        args.embedding_dim = 16
        args.units = 16
        args.epochs = 1
    return args


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


def batches(model, words, phonemes, args, shuffle):
    (source, target_in), target_out = model.encode_pairs(words, phonemes)
    return LengthBucketedBatches(
        (source, target_in),
        target_out,
        batch_size=args.batch_size,
        shuffle=shuffle,
        seed=args.seed,
    )


def transcribe_all(model, words, beam_size, batch_size=500):
    """Phonemes of many words, batched by length (few shapes to compile)."""
    order = np.argsort([len(w) for w in words], kind="stable")
    out = [None] * len(words)
    for i in range(0, len(order), batch_size):
        rows = order[i : i + batch_size]
        for row, phones in zip(
            rows, model.translate([words[r] for r in rows], beam_size=beam_size)
        ):
            out[row] = phones
    return out


def scores(model, words, phonemes, beam_size):
    start = time.time()
    outputs = transcribe_all(model, words, beam_size)
    seconds = time.time() - start
    result = error_rates(outputs, phonemes)
    result["words_per_second"] = round(len(words) / seconds, 1)
    return result, outputs


def train(args, train_data, val_data):
    keras.utils.set_random_seed(args.seed)
    source_tokenizer = CharTokenizer().fit(train_data[0])
    target_tokenizer = CharTokenizer().fit(train_data[1])
    extra = set(target_tokenizer.vocabulary.tokens[4:]) - MISAKI_SYMBOLS["us"]
    if extra:
        raise ValueError(f"Training phonemes outside misaki's US set: {sorted(extra)}")
    model = Translator(
        source_tokenizer,
        target_tokenizer,
        embedding_dim=args.embedding_dim,
        units=args.units,
        bidirectional=True,
        cell="gru",
        attention=args.attention,
        input_feeding=args.attention != "none",
        dropout=args.dropout,
        max_source_length=56,
        max_target_length=64,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(
            args.learning_rate,
            clipnorm=5.0,
            use_ema=args.ema is not None,
            ema_momentum=args.ema or 0.99,
        )
    )
    budget = TimeBudget(args.time_budget, decay_learning_rate=True)
    stop = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=args.patience, restore_best_weights=True
    )
    callbacks = [budget, stop]
    if args.ema:
        callbacks.insert(1, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    start = time.time()
    history = model.fit(
        batches(model, *train_data, args, shuffle=True),
        validation_data=batches(model, *val_data, args, shuffle=False),
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=2,
    )
    if budget.stopped and stop.best_weights is not None:
        model.set_weights(stop.best_weights)
    return model, {
        "epochs_run": len(history.history["loss"]),
        "best_val_loss": float(min(history.history["val_loss"])),
        "train_seconds": round(time.time() - start, 1),
        "stopped_by_time_budget": budget.stopped,
    }


def main(argv=None):
    args = parse_args(argv)
    try:
        train_data = load_misaki_lexicon("train")
        val_data = load_misaki_lexicon("validation")
        test_words, test_phonemes = load_misaki_lexicon("test")
    except DatasetNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    if args.quick:
        train_data = (train_data[0][:300], train_data[1][:300])
        val_data = (val_data[0][:30], val_data[1][:30])
        test_words, test_phonemes = test_words[:SLICE], test_phonemes[:SLICE]
    model, metrics = train(args, train_data, val_data)
    model.set_weights(
        [w.astype("float16").astype(w.dtype) if w.dtype.kind == "f" else w
         for w in model.get_weights()]
    )  # fmt: skip
    metrics["parameters"] = int(model.count_params())
    val_scores, _ = scores(model, *val_data, 1)
    metrics["validation_greedy_wer"] = val_scores["wer"]
    outputs = {}
    for label, beam in (("greedy", 1), (f"beam{args.beam_size}", args.beam_size)):
        result, outputs[label] = scores(model, test_words, test_phonemes, beam)
        for key, value in result.items():
            metrics[f"test_{label}_{key}"] = value
        print(f"test {label}: {json.dumps(result)}", flush=True)
    command = "python applications/misaki_us_g2p/train.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    metadata = {
        "description": "English grapheme-to-phoneme converter for Kokoro: spelling "
        "(case kept) in, misaki's American phonemes out.",
        "data": f"misaki 0.9.4's us_gold.json and us_silver.json: {len(train_data[0]):,} "
        f"training words, {len(val_data[0]):,} validation, {len(test_words):,} test "
        "(load_misaki_lexicon's split, sha1(word) % 20).",
        "data_license": "Apache-2.0 (misaki, hexgrad)",
        "command": command.strip(),
        "metrics": metrics,
        "backend": keras.backend.backend(),
        "seed": args.seed,
        "probe_texts": PROBE_WORDS,
        "probe_greedy": model.translate(PROBE_WORDS),
        "test_slice_words": test_words[:SLICE],
        "test_slice_greedy": model.translate(test_words[:SLICE]),
    }
    folder = model.save_to_preset(args.out, metadata=metadata, weights_dtype="float16")
    for word, ref, hyp in list(zip(test_words, test_phonemes, outputs["greedy"]))[:10]:
        print(f"  {word:16s} {hyp:24s} ref {ref}")
    print(f"preset: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
