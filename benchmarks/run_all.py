"""Runs every benchmark and reproduction and writes `benchmarks/RESULTS.md`.

Each script prints a markdown section (heading, what it measures, tables with
the peers measured in the same run); this runner executes them one after the
other, each in its own process, and writes their sections under a header
naming the machine, the date and the library versions. A script that fails
leaves its error in its section and the others still run.

    python benchmarks/run_all.py                  # everything (about 2 hours on 2 cores)
    python benchmarks/run_all.py --skip-training  # reproductions from their saved results
    python benchmarks/run_all.py --quick --out /tmp/RESULTS.md   # smoke run
    python benchmarks/run_all.py --only decode seq2seq_train
"""

import argparse
import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# name: (script, extra arguments, Keras backend of the runner process or None)
BENCHMARKS = {
    "attention_layers": ("attention_layers.py", [], None),
    "seq2seq_train": ("seq2seq_train.py", [], None),
    "decode": ("decode.py", [], None),
    "export_latency": ("export_latency.py", [], "tensorflow"),
    "bahdanau_fig2": ("bahdanau_fig2.py", [], None),
    "luong_scores": ("luong_scores.py", [], None),
    "pooling_seeds": ("pooling_seeds.py", [], None),
}
STUDIES = ("luong_scores", "pooling_seeds")  # these train models


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib():
    try:
        with open("/proc/meminfo", encoding="utf-8") as file:
            return int(file.readline().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def versions():
    names = ("keras", "tensorflow", "jax", "torch", "ai-edge-litert", "sacrebleu")
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def gpu():
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return done.stdout.strip() or "none"
    except (OSError, subprocess.SubprocessError):
        return "none"


def run(name, quick, rerun):
    script, extra, backend = BENCHMARKS[name]
    command = [sys.executable, os.path.join(HERE, script), *extra]
    if quick:
        command.append("--quick")
    if rerun and name in STUDIES:
        command.append("--rerun")
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
    if backend:
        env["KERAS_BACKEND"] = backend
    start = time.time()
    print(f"[{time.strftime('%H:%M:%S')}] {' '.join(command[1:])}", file=sys.stderr)
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    minutes = (time.time() - start) / 60
    print(f"  exit {done.returncode}, {minutes:.1f} min", file=sys.stderr, flush=True)
    section = done.stdout.strip()
    if done.returncode != 0:
        section += (
            f"\n\n**`{script}` failed (exit {done.returncode}):**\n\n```\n"
            f"{done.stderr.strip()[-3000:]}\n```"
        )
    return section + f"\n\n_Ran in {minutes:.1f} minutes._\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS))
    parser.add_argument("--quick", action="store_true", help="smoke runs")
    parser.add_argument(
        "--skip-training",
        action="store_true",
        help="reproductions from benchmarks/results/ instead of training again",
    )
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    load = os.getloadavg()[0]
    started = datetime.datetime.now(datetime.timezone.utc)
    sections = [run(name, args.quick, not args.skip_training) for name in names]
    minutes = (time.time() - started.timestamp()) / 60
    header = [
        "# Benchmark results",
        "",
        "Written by `python benchmarks/run_all.py"
        + (" --quick" if args.quick else "")
        + (" --skip-training" if args.skip_training else "")
        + (f" --only {' '.join(args.only)}" if args.only else "")
        + "`; every number below was measured in that run, each beside the peer "
        "it is compared with. What the numbers mean and where the time goes: "
        "[README.md](README.md).",
        "",
        f"- Date: {started:%Y-%m-%d %H:%M} UTC; the run took {minutes:.0f} minutes",
        f"- Machine: {cpu_name()}, {os.cpu_count()} cores, {memory_gib():.0f} GiB; GPU: {gpu()}",
        f"- Load average at the start: {load:.1f}, at the end: {os.getloadavg()[0]:.1f}",
        f"- Python {platform.python_version()}; {versions()}",
        "",
    ]
    with open(args.out, "w", encoding="utf-8") as file:
        file.write("\n".join(header) + "\n" + "\n".join(sections))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
