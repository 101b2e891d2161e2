"""Two processes on 127.0.0.1 train like one: JAX `keras.distribution.initialize`
with `DataParallel`, TensorFlow `MultiWorkerMirroredStrategy` from `TF_CONFIG`;
a TensorFlow worker killed mid-training resumes from `BackupAndRestore`.

The one-process run (the reference) trains here, in the test process; the
workers (`multi_process_worker.py`) are started, waited for with a timeout and
killed with their process groups by the tests. They listen and connect on
127.0.0.1 only. The tests run under their own backend's suite and skip under
the others.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

if keras.backend.backend() not in ("jax", "tensorflow"):
    pytest.skip(
        "multi-process training: JAX and TensorFlow suites only",
        allow_module_level=True,
    )

from tests.compile_flags import TEST_XLA_FLAGS  # noqa: E402
from tests.distribution import multi_process_worker as worker  # noqa: E402
from tests.distribution.test_two_devices import WEIGHT_TOLERANCE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(HERE, "multi_process_worker.py")
TASKS = ("translator", "classifier")
LAUNCH_TIMEOUT = 240  # seconds for one launch of both workers, then they are killed
KILL_EPOCH, KILL_STEP = 1, 1  # 0-based: worker 1 dies after step 2 of epoch 2
LOOPBACK = ("127.0.0.1", "[::1]")
CLUSTER_VARIABLES = ("TF_CONFIG", "KERAS_DISTRIBUTION_", "JAX_", "XLA_FLAGS")


def free_ports(count):
    """`count` distinct free TCP ports on 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def worker_env(extra):
    """The test's environment, one thread per operation, and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLUSTER_VARIABLES)}
    env.update(
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        TF_CPP_MIN_LOG_LEVEL="3",
        OMP_NUM_THREADS="1",
        TF_NUM_INTRAOP_THREADS="1",
        # The suite's compile flags (tests/compile_flags.py); the results agree
        # within float32 rounding.
        XLA_FLAGS=f"--xla_cpu_multi_thread_eigen=false {TEST_XLA_FLAGS}",
        JAX_PLATFORMS="cpu",
    )
    env.update(extra)
    return env


class Workers:
    """Worker processes, each in its own session (process group), killed on exit.

    Args:
        logs: folder of the workers' output, `worker-<i>.log`.
        per_worker: one `(args, env)` per worker, started at once.
    """

    def __init__(self, logs, per_worker):
        self.logs, self.procs = logs, []
        self.deadline = time.monotonic() + LAUNCH_TIMEOUT
        try:
            for index, (args, env) in enumerate(per_worker):
                with open(os.path.join(logs, f"worker-{index}.log"), "ab") as log:
                    self.procs.append(
                        subprocess.Popen(
                            [sys.executable, SCRIPT, *args],
                            env=env,
                            cwd=ROOT,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    )
        except BaseException:
            self.kill()
            raise

    def wait(self, until=None):
        """Waits for every worker, or for worker `until` and then kills the others
        (a launcher restarting a job that lost a worker).

        Returns:
            The workers' exit codes; fails the test if one is not 0 (`until`
            None) or a worker outlives `LAUNCH_TIMEOUT`.
        """
        if until is not None:
            self._wait(self.procs[until])
            self.kill()
        codes = [self._wait(proc) for proc in self.procs]
        if until is None and any(codes):
            pytest.fail(f"workers exited with {codes}:\n{self.tail()}")
        return codes

    def _wait(self, proc):
        try:
            return proc.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"a worker ran past {LAUNCH_TIMEOUT}s:\n{self.tail()}")

    def kill(self):
        """SIGKILLs every worker's process group (the worker and anything it started)."""
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # the group has exited
                pass
            proc.wait()

    def tail(self):
        """The end of each worker's output, for failure messages."""
        out = []
        for index in range(len(self.procs)):
            path = os.path.join(self.logs, f"worker-{index}.log")
            with open(path, errors="replace") as f:
                out.append(f"--- worker {index}\n{f.read()[-3000:]}")
        return "\n".join(out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def initial_args(out, initial):
    return ["--out", out] + (["--initial", initial] if initial else [])


def jax_workers(out, initial):
    """`(args, env)` of two JAX workers; process 0 is the coordinator."""
    (port,) = free_ports(1)
    coordinator = f"127.0.0.1:{port}"
    common = [*initial_args(out, initial), "--workers", "2"]
    # The coordinator listens on 127.0.0.1 only (jax.distributed binds to every
    # address by default).
    env = worker_env({"JAX_COORDINATOR_BIND_ADDRESS": coordinator})
    return [
        ([*common, "--index", str(i), "--coordinator", coordinator], env)
        for i in range(2)
    ]


def tensorflow_workers(out, initial):
    """`(args, env)` of two TensorFlow workers, the cluster in `TF_CONFIG`."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    return [
        (
            initial_args(out, initial),
            worker_env(
                {
                    "TF_CONFIG": json.dumps(
                        {"cluster": cluster, "task": {"type": "worker", "index": i}}
                    )
                }
            ),
        )
        for i in range(2)
    ]


WORKERS = {"jax": jax_workers, "tensorflow": tensorflow_workers}


def load(out, name, index):
    """A worker's final weights and its report."""
    with np.load(os.path.join(out, f"{name}-{index}.npz")) as f:
        got = [f[f"arr_{i}"] for i in range(len(f.files))]
    with open(os.path.join(out, f"{name}-{index}.json")) as f:
        return got, json.load(f)


def check_worker(reference, got, report, epochs=worker.EPOCHS):
    """A worker's weights and last `epochs` losses are the reference's, and its
    TCP connections were over loopback."""
    assert report["workers"] == 2
    # It trained: the weights moved far more than the tolerance.
    change = max(
        np.max(np.abs(a - b)) for a, b in zip(reference["weights"], reference["start"])
    )
    assert change > 100 * WEIGHT_TOLERANCE
    assert len(got) == len(reference["weights"])
    diff = max(np.max(np.abs(a - b)) for a, b in zip(got, reference["weights"]))
    assert diff < WEIGHT_TOLERANCE, diff
    np.testing.assert_allclose(
        report["loss"], reference["loss"][worker.EPOCHS - epochs :], rtol=1e-5
    )
    for local, remote, state in report["sockets"]:
        if state == "LISTEN" and keras.backend.backend() == "tensorflow":
            # TensorFlow's gRPC server binds every address (TF_CONFIG gives
            # no bind address); every connection is over 127.0.0.1.
            continue
        assert local.startswith(LOOPBACK), report["sockets"]
        assert state == "LISTEN" or remote.startswith(LOOPBACK), report["sockets"]


def _killing_selected(session):
    """Whether this session runs `test_killed_worker_resumes_from_backup` (slow)."""
    return any(
        item.originalname == "test_killed_worker_resumes_from_backup"
        for item in session.items
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """The one-process reference and two workers, trained side by side.

    The workers start first, from the reference's initial weights, and the
    reference trains here while they run. When the session runs
    `test_killed_worker_resumes_from_backup`, TensorFlow's workers then train
    the classifier again with `BackupAndRestore`, and worker 1 dies in epoch 2
    (SIGKILL); the launch ends there (worker 0 is killed), as for a job that
    lost a worker.

    Returns:
        `(reference, out, backup)`: per task the initial and final weights and
        the losses of the reference; the workers' output folder; the backups.
    """
    tmp = tmp_path_factory.mktemp("multi_process")
    initial, out = str(tmp / "initial"), str(tmp / "workers")
    backup = os.path.join(out, "backup")
    os.makedirs(initial)
    os.makedirs(out)
    reference = {}
    for name in TASKS:
        start = worker.weights_of(worker.build(name).model)
        np.savez(os.path.join(initial, f"{name}.npz"), *start)
        reference[name] = {"start": start}
    per_worker = WORKERS[keras.backend.backend()](out, initial)
    until = None
    if keras.backend.backend() == "tensorflow" and _killing_selected(request.session):
        tasks = "translator,classifier,classifier+backup"
        per_worker = [
            (args + ["--tasks", tasks, "--backup", backup], env)
            for args, env in per_worker
        ]
        per_worker[1][0].extend(["--kill-at", f"{KILL_EPOCH},{KILL_STEP}"])
        until = 1
    with Workers(out, per_worker) as workers:
        for name in TASKS:
            model, _, history = worker.train_one_process(name, reference[name]["start"])
            reference[name]["weights"] = worker.weights_of(model)
            reference[name]["loss"] = history.history["loss"]
        keras.utils.clear_session()
        codes = workers.wait(until)
    if until is not None:
        assert codes[until] == -signal.SIGKILL, codes  # worker 1 was killed
    return reference, out, backup


@pytest.mark.parametrize("name", TASKS)
def test_two_processes_match_one_process(runs, name):
    reference, out, _ = runs
    for index in range(2):
        got, report = load(out, name, index)
        assert report["index"] == index
        check_worker(reference[name], got, report)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="TensorFlow: MultiWorkerMirroredStrategy workers restart from backups",
)
# Slow: a second launch of two workers (25-35 s). The default run checks that
# interrupted training resumes from its backup to the same weights in one
# process (tests/reliability/test_resume_training.py).
@pytest.mark.slow
def test_killed_worker_resumes_from_backup(runs):
    reference, out, backup = runs
    for index in range(2):  # both backed up the last finished epoch, no more
        path = os.path.join(backup, "classifier", f"worker-{index}")
        with open(os.path.join(path, "training_metadata.json")) as f:
            assert json.load(f)["epoch"] == KILL_EPOCH
        assert not os.path.exists(os.path.join(out, f"classifier+backup-{index}.npz"))
    # The job starts again: both workers, other initial weights (--seed 2, no
    # --initial); each restores its backup and trains the epochs left.
    args = ["--tasks", "classifier+backup", "--backup", backup, "--seed", "2"]
    restart = [(a + args, env) for a, env in tensorflow_workers(out, None)]
    with Workers(out, restart) as workers:
        workers.wait()
    for index in range(2):
        got, report = load(out, "classifier+backup", index)
        assert len(report["loss"]) == worker.EPOCHS - KILL_EPOCH  # no epoch redone
        check_worker(reference["classifier"], got, report, len(report["loss"]))
