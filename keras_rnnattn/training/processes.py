"""Worker processes on few threads and pinned CPUs: their environment and affinity."""

import os

from keras_rnnattn._checks import positive_int


def thread_env(threads=1):
    """Environment variables that hold every numeric library to `threads` threads.

    OpenMP and MKL (NumPy, PyTorch), TensorFlow's intra- and inter-op pools
    and XLA's CPU runtime (JAX, TensorFlow's `jit_compile`). Give them to a
    child process: most libraries read them once, when they start.

    Args:
        threads: int >= 1.

    Returns:
        dict of str to str, to merge into a child's environment.

    Example:

    >>> env = thread_env(1)
    >>> env["OMP_NUM_THREADS"], env["XLA_FLAGS"]
    ('1', '--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1')
    """
    positive_int("threads", threads)
    multi = "true" if threads > 1 else "false"
    return {
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TF_NUM_INTRAOP_THREADS": str(threads),
        "TF_NUM_INTEROP_THREADS": str(threads),
        "XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={multi} "
        f"intra_op_parallelism_threads={threads}",
    }


def available_cpus():
    """The CPUs this process may run on, sorted; `[]` where the platform cannot say.

    Example:

    >>> cpus = available_cpus()
    >>> cpus == sorted(cpus)
    True
    """
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def cpu_affinity(cpus):
    """A `preexec_fn` for `subprocess` that confines the child to `cpus` (Linux).

    Thread-count settings are not enough: XLA's CPU runtime ignores
    `intra_op_parallelism_threads` for some operations and runs them on every
    core. An affinity mask binds every library alike.

    Args:
        cpus: iterable of int CPU numbers (see `available_cpus`), or None.

    Returns:
        A function of no argument, or None (no pinning) when `cpus` is None or
        empty or the platform has no `os.sched_setaffinity`.

    Example:

    >>> import subprocess, sys
    >>> pin = cpu_affinity(available_cpus()[:1])
    >>> done = subprocess.run([sys.executable, "-c", "print('ok')"],
    ...                       preexec_fn=pin, capture_output=True, text=True)
    >>> done.stdout
    'ok\\n'
    """
    cpus = set() if cpus is None else {int(cpu) for cpu in cpus}
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, cpus)
