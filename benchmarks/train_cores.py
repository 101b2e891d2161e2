"""One core or two for one training run: the misaki G2P recipe's train steps on JAX.

Trains the `misaki_us_g2p` recipe's Translator (BiGRU 256 encoder, GRU decoder
with Bahdanau attention and input feeding, batches of 128 length-bucketed
words) for two epochs of the same `--batches` batches and times the second
(the first compiles every batch shape), in three workers run one after
another, each alone on the machine:

- `1 core`: pinned to one CPU, XLA on one thread (what a run in the
  background gets while other work has the other core);
- `2 cores, XLA threads`: both CPUs, XLA's thread pool on two threads;
- `2 devices, data parallel`: both CPUs as two XLA host devices
  (`--xla_force_host_platform_device_count=2`) with
  `keras.distribution.DataParallel`, each device half of every batch.

Reports train steps per second and target tokens per second of each, and the
speed-up over one core. Writes `benchmarks/results/train_cores.{json,md}`.

    python benchmarks/train_cores.py [--batches 40] [--quick]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks import _common  # noqa: E402

CONFIGS = {
    "1 core": {"cpus": 1, "threads": 1, "devices": 1},
    "2 cores, XLA threads": {"cpus": 2, "threads": 2, "devices": 1},
    "2 devices, data parallel": {"cpus": 2, "threads": 1, "devices": 2},
}


def worker(config, batches):
    import keras
    import numpy as np

    from keras_rnnattn.datasets import LengthBucketedBatches, load_misaki_lexicon
    from keras_rnnattn.models import Translator
    from keras_rnnattn.text import CharTokenizer
    from keras_rnnattn.training import adam_with_ema

    if CONFIGS[config]["devices"] > 1:
        keras.distribution.set_distribution(keras.distribution.DataParallel())
    words, phonemes = load_misaki_lexicon("train")
    keras.utils.set_random_seed(1)
    model = Translator(
        CharTokenizer().fit(words),
        CharTokenizer().fit(phonemes),
        embedding_dim=64,
        units=256,
        bidirectional=True,
        cell="gru",
        attention="bahdanau",
        input_feeding=True,
        dropout=0.2,
        max_source_length=56,
        max_target_length=64,
    )
    model.compile(optimizer=adam_with_ema(1e-3, ema=0.999), label_smoothing=0.1)
    rows = np.random.default_rng(0).permutation(len(words))[: 128 * batches]
    (source, target_in), target_out = model.encode_pairs(
        [words[i] for i in rows], [phonemes[i] for i in rows]
    )
    data = LengthBucketedBatches(
        (source, target_in), target_out, batch_size=128, seed=1, drop_remainder=True
    )
    times = []

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.start)

    model.fit(data, epochs=2, verbose=0, shuffle=False, callbacks=[Clock()])
    steps = len(data)
    tokens = int((target_out > 0).sum())
    return {
        "config": config,
        "steps": steps,
        "compile_epoch_s": round(times[0], 1),
        "steps_per_s": round(steps / times[1], 3),
        "target_tokens_per_s": round(tokens / times[1], 1),
    }


def run(config, batches):
    settings = CONFIGS[config]
    env = dict(os.environ, **_common.thread_env(settings["threads"]))
    env["KERAS_BACKEND"] = "jax"
    env["PYTHONPATH"] = _common.REPO + os.pathsep + env.get("PYTHONPATH", "")
    if settings["devices"] > 1:
        env["XLA_FLAGS"] = (
            env["XLA_FLAGS"]
            + f" --xla_force_host_platform_device_count={settings['devices']}"
        )
    done = subprocess.run(
        [sys.executable, __file__, "--worker", config, "--batches", str(batches)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        preexec_fn=_common.cpu_pinning(settings["cpus"]),
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        _common.log(f"{config}: failed\n{done.stderr[-2000:]}")
        return {"config": config, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(lines[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="4 batches, nothing kept")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.batches)))
        return 0
    if args.quick:
        args.batches, args.out = 4, tempfile.mkdtemp()
    rows = [run(config, args.batches) for config in CONFIGS]
    base = rows[0].get("steps_per_s")
    lines = [
        "| run | steps/s | target tokens/s | × 1 core | first epoch (compiling) s |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['config']} | failed: {row['error']} | | | |")
            continue
        ratio = row["steps_per_s"] / base if base else float("nan")
        lines.append(
            f"| {row['config']} | {row['steps_per_s']:.2f} | "
            f"{row['target_tokens_per_s']:,.0f} | {ratio:.2f} | {row['compile_epoch_s']} |"
        )
    table = "\n".join(lines)
    print(table)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "train_cores.json"), "w") as file:
        json.dump(rows, file, indent=1)
    with open(os.path.join(args.out, "train_cores.md"), "w") as file:
        file.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
