"""Runs application recipes as subprocesses, several at once, and reads their metrics."""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def thread_env(threads):
    """Environment variables that pin every library to `threads` threads."""
    multi = "true" if threads > 1 else "false"
    return {
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TF_NUM_INTRAOP_THREADS": str(threads),
        "TF_NUM_INTEROP_THREADS": str(threads),
        "XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={multi} "
        f"intra_op_parallelism_threads={threads}",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }


def run_recipe(application, arguments, backend="torch", threads=1, log=None):
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
        if log:
            with open(log, "w", encoding="utf-8") as file:
                file.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(
                f"{application} {' '.join(arguments)} failed:\n{done.stderr[-2000:]}"
            )
        return json.loads(done.stdout.strip().splitlines()[-1])


def run_all(application, variants, jobs=2, threads=1, backend="torch", log_dir=None):
    """Runs `{name: arguments}` recipes, `jobs` at a time; returns `{name: metrics}`."""

    def one(item):
        name, arguments = item
        log = os.path.join(log_dir, f"{name}.log") if log_dir else None
        print(f"running {application} {name}: {' '.join(arguments)}", file=sys.stderr)
        metrics = run_recipe(application, arguments, backend, threads, log)
        print(f"done {name}", file=sys.stderr, flush=True)
        return name, metrics

    with ThreadPoolExecutor(jobs) as pool:
        return dict(pool.map(one, variants.items()))


def load_or_run(path, run, rerun):
    """The JSON results at `path`, or `run()`'s, saved there, when absent or `rerun`."""
    if not rerun and os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    results = run()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)
    return results
