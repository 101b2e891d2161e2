"""Runs every benchmark and reproduction and writes `benchmarks/RESULTS.md`.

Each script prints a markdown section (heading, what it measures, tables with
the peers measured in the same run); this runner executes them one after the
other, each in its own process, stamps each section with when it ran and the
machine's load, keeps it in `benchmarks/results/<name>.md`, and writes
RESULTS.md from all kept sections under a header naming the machine and the
library versions. `--only` re-measures some parts and keeps the others' last
sections. A script that fails leaves its error in its section and the others
still run.

    python benchmarks/run_all.py                  # everything (about 2 hours on 2 cores)
    python benchmarks/run_all.py --skip-training  # reproductions from their saved results
    python benchmarks/run_all.py --only decode seq2seq_train
    python benchmarks/run_all.py --quick --out /tmp/RESULTS.md   # smoke run, nothing kept
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
    "host_cost": ("host_cost.py", [], None),
    "recipe_optimizer": ("recipe_optimizer.py", [], None),
    "train_cores": ("train_cores.py", [], None),
    "misaki_fallback": ("misaki_fallback.py", [], None),
    "rnn_encoders": ("rnn_encoders.py", [], None),
    "decode": ("decode.py", [], None),
    "preset_decode": ("preset_decode.py", [], None),
    "torch_profile": ("torch_profile.py", [], "torch"),
    "preset_loading": ("preset_loading.py", [], None),
    "tokenizers": ("tokenizers.py", [], None),
    "export_latency": ("export_latency.py", [], "tensorflow"),
    "bahdanau_fig2": ("bahdanau_fig2.py", [], None),
    "luong_scores": ("luong_scores.py", [], None),
    "pooling_seeds": ("pooling_seeds.py", [], None),
}
STUDIES = ("luong_scores", "pooling_seeds")  # these train models
# Sections measured on other machines, kept in results/ and copied in as they are.
ELSEWHERE = {"gpu_check": "bash scripts/gpu_check.sh OUT_DIR, on a GPU machine"}
RESULTS = os.path.join(HERE, "results")


def section_path(name):
    return os.path.join(RESULTS, f"{name}.md")


def cpu_name(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name and its widest vector instructions (AVX-512 or AVX2).

    Cloud hosts of one name differ: two "AMD EPYC" hosts, one with AVX-512 and
    one without, ran the same TensorFlow train step at 1.17-1.22x and 0.85x of
    plain PyTorch.
    """
    name, flags = None, set()
    try:
        with open(cpuinfo, encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name") and name is None:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    name = name or platform.processor() or platform.machine()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
    return f"{name} ({vector})" if vector else name


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
    load = os.getloadavg()[0]
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
    stamp = datetime.datetime.fromtimestamp(start, datetime.timezone.utc)
    if name in STUDIES and not rerun:
        return section + (
            f"\n\n_Tabulated {stamp:%Y-%m-%d %H:%M} UTC from "
            f"`benchmarks/results/{name}.json` (trained in an earlier run)._\n"
        )
    return section + (
        f"\n\n_Measured {stamp:%Y-%m-%d %H:%M} UTC on {cpu_name()} in "
        f"{minutes:.1f} minutes; load "
        f"average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end._\n"
    )


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
    sections = {}
    for name in names:
        sections[name] = run(name, args.quick, not args.skip_training)
        if not args.quick:
            os.makedirs(RESULTS, exist_ok=True)
            with open(section_path(name), "w", encoding="utf-8") as file:
                file.write(sections[name])
    if not args.quick:
        for name in BENCHMARKS:
            if name not in sections and os.path.exists(section_path(name)):
                with open(section_path(name), encoding="utf-8") as file:
                    sections[name] = file.read()
    header = [
        "# Benchmark results",
        "",
        "Written by `python benchmarks/run_all.py`: each section below is one "
        "script's output, each number beside the peer measured in the same run, "
        "stamped with when it ran. What the numbers mean and where the time goes: "
        "[README.md](README.md).",
        "",
        f"- Machine of the sections this run measured: {cpu_name()}, "
        f"{os.cpu_count()} cores, {memory_gib():.0f} GiB; GPU: {gpu()} (hosts "
        "differ between runs: a section's stamp names its CPU, where recorded)",
        f"- Python {platform.python_version()}; {versions()}",
        "",
    ]
    body = [
        sections.get(name)
        or f"## `{BENCHMARKS[name][0]}`\n\nNot measured yet: "
        f"`python benchmarks/run_all.py --only {name}`.\n"
        for name in BENCHMARKS
        if name in sections or not args.quick
    ]
    for name, command in ELSEWHERE.items():
        if not args.quick and os.path.exists(section_path(name)):
            with open(section_path(name), encoding="utf-8") as file:
                body.append(
                    file.read().strip()
                    + f"\n\n_Measured on another machine by `{command}`; kept in "
                    f"`benchmarks/results/{name}.md`, not re-run by this script._\n"
                )
    with open(args.out, "w", encoding="utf-8") as file:
        file.write("\n".join(header) + "\n" + "\n".join(body))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
