"""A G2P preset on devices: its greedy decoder as one TFLite and one ONNX file.

Exports `greedy` (the whole decode loop, batch 1) of a grapheme-to-phoneme
preset to TFLite (float32, and with int8 weights: dynamic-range quantisation)
and ONNX, runs each with one thread on the first `--words` test words, and
reports beside Keras `translate` (batch 1): the file sizes, the share of words
whose phonemes equal Keras's, the word error rate against the lexicon, and the
median milliseconds per word. Writes `benchmarks/results/<preset>_devices.{json,md}`.

    KERAS_BACKEND=tensorflow python benchmarks/g2p_devices.py --preset misaki_us_g2p
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from keras_rnnattn.datasets import load_cmudict, load_misaki_lexicon  # noqa: E402
from keras_rnnattn.export import export_model  # noqa: E402
from keras_rnnattn.metrics import word_error_rate  # noqa: E402
from keras_rnnattn.models import Translator  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LOADERS = {
    "misaki_us_g2p": load_misaki_lexicon,
    "misaki_gb_g2p": lambda split: load_misaki_lexicon(split, dialect="gb"),
    "cmudict_g2p": load_cmudict,
}


def _symbols(phonemes):
    """Phonemes as space-separated symbols for the word error rate (a CMUdict
    reference is already ARPAbet with spaces; a list is its alternatives)."""
    out = []
    for p in phonemes:
        if isinstance(p, (list, tuple)):
            out.append([x if " " in x else " ".join(x) for x in p])
        else:
            out.append(p if " " in p else " ".join(p))
    return out


def median_ms(fn, items):
    times = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def tflite_runner(path):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    run = interpreter.get_signature_runner()
    return lambda ids: run(source_ids=ids)["tokens"][0]


def onnx_runner(path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options)
    return lambda ids: session.run(["tokens"], {"source_ids": ids})[0][0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="misaki_us_g2p")
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--length", type=int, default=48, help="source ids per word")
    parser.add_argument("--max-length", type=int, default=48, help="output tokens")
    args = parser.parse_args(argv)

    import keras

    model = Translator.from_preset(args.preset)
    words, references = LOADERS[args.preset]("test")
    words, references = words[: args.words], references[: args.words]
    folder = tempfile.mkdtemp()
    files = {}
    for fmt, suffix, quantize in (
        ("litert", "tflite", False),
        ("litert_int8", "tflite", True),
        ("onnx", "onnx", False),
        ("onnx_int8", "onnx", True),
    ):
        out = os.path.join(folder, fmt)
        export_model(
            model,
            out,
            fmt.split("_")[0],
            quantize=quantize,
            batch_size=1,
            sequence_length=args.length,
            max_length=args.max_length,
            signatures=["greedy"],
        )
        files[fmt] = os.path.join(out, f"greedy.{suffix}")
    runs = {
        "litert": tflite_runner(files["litert"]),
        "litert_int8": tflite_runner(files["litert_int8"]),
        "onnx": onnx_runner(files["onnx"]),
        "onnx_int8": onnx_runner(files["onnx_int8"]),
    }

    def ids_of(word):
        ids = model.encode_source([word], truncate=True)[:, : args.length]
        return np.pad(ids, ((0, 0), (0, args.length - ids.shape[1]))).astype("int32")

    inputs = [ids_of(w) for w in words]
    reference = model.translate(words, max_length=args.max_length)
    result = {"preset": args.preset, "words": len(words), "formats": {}}
    decode = model.target_tokenizer.decode
    for fmt, run in runs.items():
        outputs = [decode(run(x)) for x in inputs]
        result["formats"][fmt] = {
            "file": os.path.basename(files[fmt]),
            "mib": round(os.path.getsize(files[fmt]) / 2**20, 2),
            "equal_to_keras": sum(a == b for a, b in zip(outputs, reference)),
            "wer": round(word_error_rate(_symbols(outputs), _symbols(references)), 2),
            "ms_per_word": round(median_ms(run, inputs), 3),
        }
    result["keras_wer"] = round(
        word_error_rate(_symbols(reference), _symbols(references)), 2
    )
    result["keras_ms_per_word"] = round(
        median_ms(
            lambda w: model.translate([w], max_length=args.max_length), words[:100]
        ),
        3,
    )
    result["threads"] = 1
    result["backend"] = keras.backend.backend()
    print(json.dumps(result, indent=1))
    base = os.path.join(HERE, "results", f"{args.preset}_devices")
    with open(base + ".json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    with open(base + ".md", "w", encoding="utf-8") as f:
        f.write(
            f"# {args.preset} on devices: greedy, batch 1, one thread, "
            f"the first {len(words)} test words\n\n"
            "| runtime | file | MiB | outputs equal to Keras | WER % | ms per word |\n"
            "|---|---|---|---|---|---|\n"
        )
        names = {
            "litert": "LiteRT, float32",
            "litert_int8": "LiteRT, int8 weights (dynamic range)",
            "onnx": "onnxruntime, float32",
            "onnx_int8": "onnxruntime, int8 weights (per column)",
        }
        for fmt, row in result["formats"].items():
            f.write(
                f"| {names[fmt]} | {row['file']} | {row['mib']} | "
                f"{row['equal_to_keras']}/{len(words)} | {row['wer']} | "
                f"{row['ms_per_word']} |\n"
            )
        f.write(
            f"| Keras translate | | | | {result['keras_wer']} | "
            f"{result['keras_ms_per_word']} |\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
