"""How long `from_preset` takes for each shipped preset, per backend, after the imports.

Each measurement is a fresh process under one Keras backend, pinned to
`--threads` CPUs: it imports `keras_rnnattn.models` (Keras and the backend),
then times `PresetMixin.from_preset(<name>)` (read the files, check the
weights' SHA-256, build the model in safe mode, load the weights), and records
whether TensorFlow was imported by then. The target: under 2 s for every
shipped preset on every backend, and no TensorFlow on JAX or PyTorch. ms,
median of `--repeats` processes.

    python benchmarks/preset_loading.py
"""

import argparse
import json
import os
import statistics
import sys
import time

from _common import REPO, run_worker

BACKENDS = ("tensorflow", "jax", "torch")
TARGET_S = 2.0


def shipped():
    """The names of the presets in the checkout's saved_models/."""
    folder = os.path.join(REPO, "saved_models")
    return sorted(
        name
        for name in os.listdir(folder)
        if os.path.isfile(os.path.join(folder, name, "config.json"))
    )


def worker(name):
    start = time.perf_counter()
    import keras_rnnattn.models  # noqa: F401 (Keras, the backend, the classes)
    from keras_rnnattn.preset_mixin import PresetMixin

    imported = time.perf_counter() - start
    start = time.perf_counter()
    model = PresetMixin.from_preset(name)
    loaded = time.perf_counter() - start
    print(
        json.dumps(
            {
                "import_s": imported,
                "load_s": loaded,
                "class": type(model).__name__,
                "tensorflow": "tensorflow" in sys.modules,
            }
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help="presets (default: all shipped)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="one process each")
    args = parser.parse_args()
    if args.worker:
        worker(args.names[0])
        return
    names = args.names or shipped()
    repeats = 1 if args.quick else args.repeats
    rows = []
    for name in names:
        for backend in BACKENDS:
            runs = []
            for _ in range(repeats):
                found = run_worker(__file__, backend, args.threads, [name])
                if found is not None:
                    runs.append(found)
            if not runs:
                rows.append((name, backend, None, None, None, None))
                continue
            rows.append(
                (
                    name,
                    backend,
                    runs[0]["class"],
                    statistics.median(r["import_s"] for r in runs),
                    statistics.median(r["load_s"] for r in runs),
                    any(r["tensorflow"] for r in runs),
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
        f"TensorFlow backend). Target: under {TARGET_S:.0f} s on every backend.\n"
    )
    print(
        "| preset | class | backend | imports (s) | from_preset (s) "
        "| TensorFlow imported | under 2 s |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, backend, cls, imported, loaded, tf in rows:
        if loaded is None:
            print(f"| {name} | | {backend} | failed | failed | | |")
            continue
        print(
            f"| {name} | {cls} | {backend} | {imported:.2f} | {loaded:.2f} | "
            f"{'yes' if tf else 'no'} | {'yes' if loaded < TARGET_S else 'no'} |"
        )


if __name__ == "__main__":
    main()
