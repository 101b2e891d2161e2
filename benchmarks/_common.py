"""Helpers shared by the benchmark scripts: thread pinning, worker processes, memory,
recipes run as studies."""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from keras_rnnattn.training import processes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 2**20


def log(*args):
    """Progress and diagnostics: stderr (stdout holds only the results)."""
    print(*args, file=sys.stderr, flush=True)


def thread_env(threads):
    """Environment variables that pin every library to `threads` threads."""
    return {**processes.thread_env(threads), "TF_CPP_MIN_LOG_LEVEL": "3"}


def pin_threads(threads):
    """Pins TensorFlow and PyTorch in this process (call before either runs an op)."""
    import tensorflow as tf
    import torch

    torch.set_num_threads(threads)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # already initialised: the environment variables hold
        pass


def cpu_pinning(threads):
    """A `preexec_fn` that confines a child process to `threads` CPUs (Linux).

    Thread-count settings are not enough: XLA's CPU runtime in JAX 0.10 ignores
    `intra_op_parallelism_threads` and runs a matmul on every core (a 2048²
    product measured 310 GFLOP/s "on one thread" against 181 for torch on a
    quiet 2-core machine). An affinity mask binds every library alike.
    """
    if threads >= (os.cpu_count() or 1):
        return None
    return processes.cpu_affinity(processes.available_cpus()[:threads])


def run_worker(script, backend, threads, argv, timeout=1800):
    """Runs `script --worker *argv` under a Keras backend; its last stdout line as JSON.

    The worker is pinned to `threads` CPUs (`cpu_pinning`). Returns None (and
    shows the end of its stderr) if the worker fails.
    """
    env = dict(os.environ, **thread_env(threads), KERAS_BACKEND=backend)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(script), "--worker", *map(str, argv)]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=cpu_pinning(threads),
        )
    except subprocess.TimeoutExpired:
        log(f"{backend} {' '.join(map(str, argv))}: timed out after {timeout} s")
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        log(f"{backend} {' '.join(map(str, argv))} failed:\n{done.stderr[-2000:]}")
        return None
    log(f"{backend} {' '.join(map(str, argv))}: {time.perf_counter() - start:.0f} s")
    return json.loads(lines[-1])


def median_round(runs):
    """Of one cell's worker results from several rounds, the run of median rate.

    The rounds run every worker of a benchmark in turn, so a slow minute of
    a shared host falls on one round of each cell rather than on every run
    of one backend. `runs`: worker results, None where a worker failed.
    Returns the run (with every round's rate added as `"round_rates"`), or
    None if all failed.
    """
    done = sorted((r for r in runs if r is not None), key=lambda r: r["rate"])
    if not done:
        return None
    return dict(done[(len(done) - 1) // 2], round_rates=[r["rate"] for r in runs if r])


def print_round_rates(results, modes, names):
    """A line per row: each round's rate of `modes` (`names` their labels)."""
    print("\nEach round's sentences/s, in the order the rounds ran:\n")
    for row, by_mode in results.items():
        parts = [
            f"{names[m]} {', '.join(f'{r:,.1f}' for r in by_mode[m]['round_rates'])}"
            for m in modes
            if by_mode.get(m)
        ]
        if parts:
            print(f"- {row}: {'; '.join(parts)}")


def add_worker_arguments(parser, name, choices, eager_only_help):
    """The arguments a benchmark's worker processes take, and `--eager-only`.

    `--worker`, `--<name>` (one of `choices`: what the worker measures) and
    `--jit-compile` are hidden: the benchmark passes them to its workers.
    `--eager-only` skips the torch runs with `compile(jit_compile=True)`.
    """
    import argparse

    parser.add_argument("--eager-only", action="store_true", help=eager_only_help)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(f"--{name}", choices=choices, help=argparse.SUPPRESS)
    parser.add_argument("--jit-compile", action="store_true", help=argparse.SUPPRESS)


def median(values):
    return statistics.median(values)


def rss_bytes():
    """The resident set size of this process now, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def max_rss_bytes():
    """The peak resident set size of this process so far (`ru_maxrss`)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class PeakRSS:
    """Context manager: the highest RSS sampled every `interval` s inside the block.

    A background thread reads /proc/self/statm; `peak` is in bytes. Native code
    (the compiled decoders, PyTorch and NumPy kernels) releases the GIL, so the
    sampler runs during it; a peak shorter than `interval` can be missed.
    `start` is the RSS on entering the block.
    """

    def __init__(self, interval=0.001):
        self.interval = interval
        self.peak = 0

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            self._stop.wait(self.interval)

    def __enter__(self):
        self._stop = threading.Event()
        self.start = self.peak = rss_bytes()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())
        return False


def run_recipe(application, arguments, backend="torch", threads=1, log_path=None):
    """Trains `applications/<application>/train.py` into a temporary preset.

    Returns the metrics the recipe prints as JSON on its last line (those of
    the preset's `metadata.json`), or raises `RuntimeError` with the end of
    the recipe's output.
    """
    script = os.path.join(REPO, "applications", application, "train.py")
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "preset")
        env = dict(os.environ, **thread_env(threads), KERAS_BACKEND=backend)
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        done = subprocess.run(
            [sys.executable, script, "--out", out, *arguments],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if log_path:
            with open(log_path, "w", encoding="utf-8") as file:
                file.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(
                f"{application} {' '.join(arguments)} failed:\n{done.stderr[-2000:]}"
            )
        return json.loads(done.stdout.strip().splitlines()[-1])


def run_recipes(
    application, variants, jobs=2, threads=1, backend="torch", on_done=None
):
    """Runs `{name: arguments}` recipes, `jobs` at a time; returns `{name: metrics}`.

    `on_done(name, metrics)` is called as each one finishes.
    """

    def one(item):
        name, arguments = item
        log(f"running {application} {name}: {' '.join(arguments)}")
        metrics = run_recipe(application, arguments, backend, threads)
        log(f"done {name}")
        if on_done is not None:
            on_done(name, metrics)
        return name, metrics

    with ThreadPoolExecutor(jobs) as pool:
        return dict(pool.map(one, variants.items()))


def _write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=1)


def run_study(path, application, variants, rerun, jobs=2, threads=1, quick=False):
    """The results of a study of recipe variants, `{name: metrics}`, kept at `path`.

    Without `rerun`, the saved results when they exist. Otherwise trains the
    variants; each finished one is written at once to `path + ".partial"`, so
    an interrupted run resumes with the variants still missing. With `quick`
    (smoke runs), trains them and keeps nothing.
    """
    if quick:
        return run_recipes(application, variants, jobs, 1)
    if not rerun and os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    partial_path = path + ".partial"
    done = {}
    if os.path.exists(partial_path):
        with open(partial_path, encoding="utf-8") as file:
            done = json.load(file)
    lock = threading.Lock()

    def save(name, metrics):
        with lock:
            done[name] = metrics
            _write_json(partial_path, done)

    todo = {name: args for name, args in variants.items() if name not in done}
    if done:
        log(f"resuming {path}: {len(done)} done, {len(todo)} to train")
    run_recipes(application, todo, jobs, threads, on_done=save)
    results = {name: done[name] for name in variants}
    _write_json(path, results)
    os.remove(partial_path)
    return results
