"""The diacritics preset as one file: ONNX and LiteRT against Keras.

Exports `diacritics_cs` (batch 1, one window of `max_length` characters) to
ONNX (float32, and int8 weights) and to LiteRT (float32 computation on the
stored float16 weights), runs each with one thread over the windows of the
held-out lines of every source (`keras_rnnattn.text.diacritics.text_windows`),
and reports beside Keras (`predict_on_batch`, batch 1): the file size, the
share of characters whose tag equals Keras's, the word accuracy of the
restored lines, and the median milliseconds per window. Writes
`benchmarks/results/diacritics_cs_devices.{json,md}`; `--into FOLDER` adds
the rows to a preset's metadata as `metrics.devices`.

    KERAS_BACKEND=tensorflow python benchmarks/diacritics_devices.py \\
        --into saved_models/diacritics_cs
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from applications.diacritics_cs import evaluation  # noqa: E402
from keras_rnnattn.datasets import load_czech_text  # noqa: E402
from keras_rnnattn.export import export_model  # noqa: E402
from keras_rnnattn.models import SequenceTagger  # noqa: E402
from keras_rnnattn.text import apply_diacritics, strip_diacritics  # noqa: E402
from keras_rnnattn.text.diacritics import char_ids, model_text, text_windows  # noqa: E402


def onnx_runner(path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options)
    return lambda ids: session.run(None, {"token_ids": ids})[0][0]


def litert_runner(path):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    run = interpreter.get_signature_runner()
    return lambda ids: run(token_ids=ids)["probabilities"][0]


def restore_with(run, model, lines, width):
    """Each line restored with `run` (ids `(1, width)` → probabilities), the
    tag ids of every window, and the milliseconds of each call."""
    restored, tags, times = [], [], []
    for line in lines:
        read = model_text(strip_diacritics(line))
        line_tags = []
        for start, end in text_windows(read, width):
            ids = np.zeros((1, width), "int32")
            ids[0, : end - start] = char_ids(model.tokenizer, read[start:end])
            begin = time.perf_counter()
            best = np.argmax(run(ids), axis=-1)[: end - start]
            times.append(1000 * (time.perf_counter() - begin))
            line_tags += [model.tags[j] for j in best]
            tags.append(best)
        restored.append(apply_diacritics(strip_diacritics(line), line_tags))
    return restored, tags, times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="saved_models/diacritics_cs")
    parser.add_argument("--lines", type=int, default=300, help="lines a source")
    parser.add_argument("--into", default=None)
    args = parser.parse_args(argv)
    model = SequenceTagger.from_preset(args.preset)
    width = model.max_length
    test = load_czech_text("test")
    lines = [
        line
        for docs in test.values()
        for line in evaluation.held_out_lines(docs)[: args.lines]
    ]
    folder = tempfile.mkdtemp()
    files = {
        "onnx": export_model(
            model, f"{folder}/onnx", "onnx", batch_size=1, sequence_length=width
        ),
        "onnx_int8": export_model(
            model,
            f"{folder}/int8",
            "onnx",
            batch_size=1,
            sequence_length=width,
            quantize=True,
        ),
        "litert": export_model(
            model, f"{folder}/lite", "tflite", batch_size=1, sequence_length=width
        ),
    }
    keras_run = lambda ids: np.asarray(model.predict_on_batch(ids))[0]  # noqa: E731
    reference, keras_tags, keras_ms = restore_with(keras_run, model, lines, width)
    rows = {
        "keras": {
            "runtime": f"Keras predict_on_batch, {os.environ['KERAS_BACKEND']}",
            "word_accuracy": evaluation.word_scores(reference, lines)["word_accuracy"],
            "ms_per_window": round(statistics.median(keras_ms), 2),
        }
    }
    runners = {"onnx": onnx_runner, "onnx_int8": onnx_runner, "litert": litert_runner}
    for name, path in files.items():
        suffix = ".tflite" if name == "litert" else ".onnx"
        file = os.path.join(path, "serving_default" + suffix)
        restored, tags, ms = restore_with(runners[name](file), model, lines, width)
        equal = sum(int((a == b).sum()) for a, b in zip(tags, keras_tags))
        rows[name] = {
            "file_mib": round(os.path.getsize(file) / 2**20, 2),
            "tags_equal": equal,
            "characters": sum(len(t) for t in keras_tags),
            "word_accuracy": evaluation.word_scores(restored, lines)["word_accuracy"],
            "ms_per_window": round(statistics.median(ms), 2),
        }
    result = {"lines": len(lines), "width": width, "rows": rows}
    print(json.dumps(result, indent=1))
    out = os.path.join(HERE, "results", "diacritics_cs_devices.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    if args.into:
        from keras_rnnattn.training.metadata import update_metadata

        update_metadata(args.into, {"devices": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
