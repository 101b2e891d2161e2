"""Worker-process helpers: the thread environment and the CPU affinity."""

import doctest
import os
import subprocess
import sys

import pytest

from keras_rnnattn.training import processes
from keras_rnnattn.training.processes import available_cpus, cpu_affinity, thread_env
from tests.backends import on_one_backend

pytestmark = on_one_backend  # no Keras: the same on every backend

# A `preexec_fn` makes subprocess fork; JAX, imported by the suite, warns about
# any fork (the child only sets its affinity and runs a new program).
fork_warning = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


def test_thread_env_holds_every_library_to_the_threads_given():
    one = thread_env()
    assert one == {
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
        "intra_op_parallelism_threads=1",
    }
    four = thread_env(4)
    assert four["OMP_NUM_THREADS"] == four["TF_NUM_INTEROP_THREADS"] == "4"
    assert four["XLA_FLAGS"] == (
        "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=4"
    )
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match=f"Received: threads={bad!r}"):
            thread_env(bad)


@fork_warning
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_cpu_affinity_pins_a_child_process():
    cpus = available_cpus()
    assert cpus == sorted(os.sched_getaffinity(0))
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
        preexec_fn=cpu_affinity(cpus[-1:]),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(cpus[-1:])
    assert cpu_affinity(None) is None and cpu_affinity([]) is None


@fork_warning
def test_docstring_examples_run():
    result = doctest.testmod(processes)
    assert result.attempted >= 6 and result.failed == 0
