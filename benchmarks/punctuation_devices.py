"""The punctuation preset on devices: one TFLite file, its tags against Keras's.

Exports `punctuation_en`'s tagger (batch 1, one window of `max_length`
pieces) to TFLite (float32 computation on the stored float16 weights), runs
it with one thread over the windows `PunctuationStream` makes of each
source's held-out text, and reports beside Keras (`predict_on_batch`, batch
1): the file size, the share of words whose tag equals Keras's, and the
median milliseconds per window and per 100 words of a stream (a window
every half window, `100 / stride` windows). Writes
`benchmarks/results/punctuation_en_devices.{json,md}`.

    KERAS_BACKEND=tensorflow python benchmarks/punctuation_devices.py
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

from keras_rnnattn.export import export_model  # noqa: E402
from keras_rnnattn.models import SequenceTagger  # noqa: E402
from keras_rnnattn.models._punctuation_windows import central_windows  # noqa: E402
from keras_rnnattn.models.punctuation_stream import PunctuationStream  # noqa: E402
from keras_rnnattn.text.word_pieces import word_piece_ids, word_tags  # noqa: E402


def tflite_runner(path):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    run = interpreter.get_signature_runner()
    return lambda ids: run(token_ids=ids)["probabilities"][0]


def windows_of(model, words, window, length):
    """`(ids (1, length), piece lengths per word)` of each central window."""
    out = []
    for start, end, _, _ in central_windows(len(words), window):
        pieces = word_piece_ids(model.tokenizer, words[start:end])
        flat = [i for p in pieces for i in p][:length]
        if sum(len(p) for p in pieces) > length:
            continue  # rare: longer than the exported window
        ids = np.zeros((1, length), "int32")
        ids[0, : len(flat)] = flat
        out.append((ids, [len(p) for p in pieces]))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="saved_models/punctuation_en")
    parser.add_argument("--windows", type=int, default=300)
    args = parser.parse_args(argv)
    from applications.punctuation_en import corpus

    model = SequenceTagger.from_preset(args.preset)
    stream = PunctuationStream(model)
    length = model.max_length
    items = []
    for name in corpus.SOURCES:
        words, _ = corpus.tagged_source(name, "test")
        items += windows_of(model, words, stream.window, length)
    items = items[:: max(1, len(items) // args.windows)][: args.windows]
    folder = tempfile.mkdtemp()
    export_model(
        model, folder, "tflite", batch_size=1, sequence_length=length, max_length=None
    )
    path = os.path.join(folder, "serving_default.tflite")
    lite = tflite_runner(path)
    same = total = 0
    lite_ms, keras_ms = [], []
    for ids, lengths in items:
        start = time.perf_counter()
        probs = lite(ids)
        lite_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        reference = np.asarray(model.predict_on_batch(ids))[0]
        keras_ms.append((time.perf_counter() - start) * 1000)
        n = sum(lengths)
        tags = [model.tags[j] for j in probs[:n].argmax(-1)]
        expected = [model.tags[j] for j in reference[:n].argmax(-1)]
        a, b = word_tags(lengths, tags), word_tags(lengths, expected)
        same += sum(x == y for x, y in zip(a, b))
        total += len(a)
    words_per_window = statistics.mean(len(lengths) for _, lengths in items)
    result = {
        "preset": os.path.basename(args.preset.rstrip("/")),
        "windows": len(items),
        "words_per_window": round(words_per_window, 1),
        "pieces_per_window": length,
        "tflite_bytes": os.path.getsize(path),
        "words_equal_to_keras": f"{same}/{total}",
        "tflite_ms_per_window": round(statistics.median(lite_ms), 2),
        "keras_ms_per_window": round(statistics.median(keras_ms), 2),
    }
    # A stream tags a window every `stride` words: the cost of 100 words.
    scale = 100 / stream.stride
    result["stride"] = stream.stride
    result["tflite_ms_per_100_words"] = round(result["tflite_ms_per_window"] * scale, 2)
    result["keras_ms_per_100_words"] = round(result["keras_ms_per_window"] * scale, 2)
    print(json.dumps(result, indent=1))
    out = os.path.join(HERE, "results", f"{result['preset']}_devices")
    with open(out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(
            f"{result['preset']} on one thread, batch 1, windows of {length} pieces "
            f"(~{words_per_window:.0f} words) from the held-out documents\n\n"
            "| path | file | tags equal to Keras | ms a window | ms per 100 words |\n"
            "|---|---|---|---|---|\n"
            f"| TFLite (LiteRT), float32 | {result['tflite_bytes'] / 2**20:.1f} MiB | "
            f"{result['words_equal_to_keras']} words | "
            f"{result['tflite_ms_per_window']} | {result['tflite_ms_per_100_words']} |\n"
            f"| Keras ({os.environ['KERAS_BACKEND']}) predict_on_batch | | | "
            f"{result['keras_ms_per_window']} | {result['keras_ms_per_100_words']} |\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
