"""How long `from_preset` takes for each shipped preset, per backend, after the imports,
and `keras.saving.load_model` of the same model saved as one `.keras` file.

Each measurement is a fresh process under one Keras backend, pinned to
`--threads` CPUs: it imports `keras_rnnattn.models` (Keras and the backend),
then times `PresetMixin.from_preset(<name>)` (read the files, check the
weights' SHA-256, build the model in safe mode, load the weights), and records
whether TensorFlow was imported by then; another process times
`keras.saving.load_model` of the preset's model saved as `<name>.keras` (saved
once beforehand, on the JAX backend, into a temporary folder). The targets:
under 2 s for every shipped preset on every backend, no TensorFlow on JAX or
PyTorch, and the `.keras` file within 2x of `from_preset`. Seconds, median of
`--repeats` processes.

`first output (s)` is the loaded model's first answer to one text in the
same process, its string method as a user calls it (`translate`, `generate`,
`classify`, `tag`): on TensorFlow and JAX the time to trace (and compile) the
decoding or predict function, on eager torch one call. The target: under 2 s.

    python benchmarks/preset_loading.py
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from _common import REPO, run_worker

BACKENDS = ("tensorflow", "jax", "torch")
TARGET_S = 2.0
TEXT = "the cat sat on the mat"
# The string method a user calls first, per model class.
FIRST_OUTPUT = {
    "Translator": lambda model: model.translate([TEXT]),
    "TranslatorEnsemble": lambda model: model.translate([TEXT]),
    "AttentiveLanguageModel": lambda model: model.generate([TEXT], max_length=48),
    "AttentionClassifier": lambda model: model.classify([TEXT]),
    "SequenceTagger": lambda model: model.tag([TEXT]),
}


def shipped():
    """The names of the presets in the checkout's saved_models/."""
    folder = os.path.join(REPO, "saved_models")
    return sorted(
        name
        for name in os.listdir(folder)
        if os.path.isfile(os.path.join(folder, name, "config.json"))
    )


def worker(name, mode, keras_file):
    start = time.perf_counter()
    import keras

    import keras_rnnattn.models  # noqa: F401 (Keras, the backend, the classes)
    from keras_rnnattn.presets.mixin import PresetMixin

    imported = time.perf_counter() - start
    if mode == "save":
        PresetMixin.from_preset(name).save(keras_file)
        print(json.dumps({}))
        return
    start = time.perf_counter()
    if mode == "keras":
        model = keras.saving.load_model(keras_file)
    else:
        model = PresetMixin.from_preset(name)
    loaded = time.perf_counter() - start
    first = None
    if mode == "preset":
        start = time.perf_counter()
        FIRST_OUTPUT[type(model).__name__](model)
        first = time.perf_counter() - start
    print(
        json.dumps(
            {
                "import_s": imported,
                "load_s": loaded,
                "first_s": first,
                "class": type(model).__name__,
                "tensorflow": "tensorflow" in sys.modules,
            }
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="preset", help=argparse.SUPPRESS)
    parser.add_argument("--keras-file", help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help="presets (default: all shipped)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="one process each")
    args = parser.parse_args()
    if args.worker:
        worker(args.names[0], args.mode, args.keras_file)
        return
    names = args.names or shipped()
    repeats = 1 if args.quick else args.repeats
    folder = tempfile.mkdtemp()
    rows = []
    for name in names:
        keras_file = os.path.join(folder, f"{name}.keras")
        run_worker(
            __file__,
            "jax",
            args.threads,
            [name, "--mode", "save", "--keras-file", keras_file],
        )
        for backend in BACKENDS:
            runs = {"preset": [], "keras": []}
            for _ in range(repeats):
                for mode, found in runs.items():
                    argv = [name, "--mode", mode, "--keras-file", keras_file]
                    result = run_worker(__file__, backend, args.threads, argv)
                    if result is not None:
                        found.append(result)
            if not runs["preset"] or not runs["keras"]:
                rows.append((name, backend, None, None, None, None, None, None))
                continue
            rows.append(
                (
                    name,
                    backend,
                    runs["preset"][0]["class"],
                    statistics.median(r["import_s"] for r in runs["preset"]),
                    statistics.median(r["load_s"] for r in runs["preset"]),
                    any(r["tensorflow"] for r in runs["preset"]),
                    statistics.median(r["load_s"] for r in runs["keras"]),
                    statistics.median(r["first_s"] for r in runs["preset"]),
                )
            )
    print("## Loading the shipped presets (`benchmarks/preset_loading.py`)\n")
    print(
        f"`from_preset` of each preset in `saved_models/`, after `import "
        f"keras_rnnattn.models`, one fresh process per measurement, "
        f"{args.threads} thread(s); seconds, median of {repeats} process(es). "
        "Loading reads the files, checks the weights' SHA-256, builds the model "
        "in safe mode and loads the weights. `TensorFlow imported`: whether the "
        "process had imported TensorFlow once loaded (it should only on the "
        "TensorFlow backend). `.keras (s)`: `keras.saving.load_model` of the "
        "same model saved as one `.keras` file, in its own process. Targets: "
        f"under {TARGET_S:.0f} s on every backend, and the `.keras` file within "
        "2x of `from_preset`. `first output (s)`: the loaded model's first "
        f"answer to one text ({TEXT!r}) in the `from_preset` process, through "
        "the string method a user calls first (`translate`, `generate`, "
        "`classify`, `tag`): tracing and compiling included on TensorFlow and "
        f"JAX; target under {TARGET_S:.0f} s.\n"
    )
    print(
        "| preset | class | backend | imports (s) | from_preset (s) "
        "| TensorFlow imported | under 2 s | .keras (s) | .keras / from_preset "
        "| first output (s) | under 2 s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, backend, cls, imported, loaded, tf, keras_s, first in rows:
        if loaded is None:
            print(f"| {name} | | {backend} | failed | failed | | | | | | |")
            continue
        print(
            f"| {name} | {cls} | {backend} | {imported:.2f} | {loaded:.2f} | "
            f"{'yes' if tf else 'no'} | {'yes' if loaded < TARGET_S else 'no'} | "
            f"{keras_s:.2f} | {keras_s / loaded:.2f}x | {first:.2f} | "
            f"{'yes' if first < TARGET_S else 'no'} |"
        )


if __name__ == "__main__":
    main()
