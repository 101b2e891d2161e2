"""`benchmarks/run_all.py`'s machine stamp: the CPU's name and vector width."""

import importlib.util
import os

from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_runner():
    path = os.path.join(REPO, "benchmarks", "run_all.py")
    spec = importlib.util.spec_from_file_location("run_all", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_cpuinfo(tmp_path, flags):
    path = tmp_path / "cpuinfo"
    processor = f"processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {flags}\n\n"
    path.write_text(processor + processor.replace(": 0", ": 1"))
    return str(path)


@on_one_backend
def test_the_stamp_names_the_widest_vector_instructions(tmp_path):
    cpu_name = load_runner().cpu_name
    avx512 = write_cpuinfo(tmp_path, "fpu sse2 avx avx2 fma avx512f avx512bw")
    assert cpu_name(avx512) == "AMD EPYC (AVX-512)"
    avx2 = write_cpuinfo(tmp_path, "fpu sse2 avx avx2 fma")
    assert cpu_name(avx2) == "AMD EPYC (AVX2)"
    assert cpu_name(write_cpuinfo(tmp_path, "fpu sse2")) == "AMD EPYC"


@on_one_backend
def test_the_stamp_falls_back_without_cpuinfo(tmp_path):
    name = load_runner().cpu_name(str(tmp_path / "missing"))
    assert isinstance(name, str) and name and "(" not in name
