"""The torch fence and the torch options: `_backend/_torch_private.py` resolves
every private torch name the package uses, no other module names one, and
`torch_options` sets the torch paths for a block only."""

import ast
import os

import pytest

from keras_rnnattn._backend import (
    TorchOptions,
    _torch_private,
    current_torch_options,
    torch_options,
)
from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = os.path.join("keras_rnnattn", "_backend", "_torch_private.py")


@on_one_backend
def test_every_private_torch_name_resolves_on_the_installed_torch():
    torch = pytest.importorskip("torch")
    for name in _torch_private.NAMES:
        assert name() is not None, name.__name__
    for op in _torch_private.FOREACH_OPS:
        assert callable(_torch_private.foreach(op)), op
    assert isinstance(_torch_private.mkldnn_enabled(), bool)
    assert _torch_private.dynamo_config().allow_rnn in (True, False)
    # The Adam kernels through the fence compute what plain torch does.
    a = [torch.ones(3), torch.full((2,), 2.0)]
    _torch_private.foreach("mul_")(a, 3.0)
    assert [t.tolist() for t in a] == [[3.0, 3.0, 3.0], [6.0, 6.0]]
    major_minor = ".".join(torch.__version__.split(".")[:2])
    checked = ".".join(_torch_private.CHECKED_ON.split(".")[:2])
    assert major_minor == checked, (
        f"torch {torch.__version__} is installed; the fence was checked on "
        f"{_torch_private.CHECKED_ON}: run this suite's torch tests, then update "
        "CHECKED_ON"
    )


def private_torch_uses(source, path="<source>"):
    """Lines of `source` that name a private torch attribute or module."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "torch._"
        ):
            found.append(node.lineno)
        elif isinstance(node, ast.Import) and any(
            alias.name.startswith("torch._") for alias in node.names
        ):
            found.append(node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(node.lineno)
    return found


@on_one_backend
def test_no_module_but_the_fence_names_a_private_torch_name():
    found = {}
    for folder, _, files in os.walk(os.path.join(REPO, "keras_rnnattn")):
        for name in files:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, REPO)
            if not name.endswith(".py") or relative == FENCE:
                continue
            with open(path, encoding="utf-8") as file:
                lines = private_torch_uses(file.read(), path)
            if lines:
                found[relative] = lines
    assert not found, f"Private torch names outside {FENCE}: {found}"


def test_the_fence_guard_bites():
    assert private_torch_uses("import torch\ntorch._foreach_mul_(a, 2)\n") == [2]
    assert private_torch_uses("from torch._dynamo.utils import counters\n") == [1]
    assert private_torch_uses("import torch._inductor.config as c\n") == [1]
    assert private_torch_uses("import torch\ntorch.__version__\ntorch.ops\n") == []


def test_torch_options_hold_for_their_block_only():
    assert current_torch_options() == TorchOptions()
    with torch_options(cuda_graphs=True) as outer:
        assert outer.cuda_graphs and outer.whole_loop
        with torch_options(whole_loop=False):
            assert current_torch_options() == TorchOptions(
                whole_loop=False, cuda_graphs=True
            )
        assert current_torch_options() == outer
        with pytest.raises(RuntimeError):
            with torch_options(rnn_operator=True):
                raise RuntimeError("left by an error")
        assert not current_torch_options().rnn_operator
    assert current_torch_options() == TorchOptions()


def test_torch_options_errors_name_the_fix():
    with pytest.raises(ValueError, match=r"Unknown torch options \['cuda_graph'\]"):
        with torch_options(cuda_graph=True):
            pass
    with pytest.raises(ValueError, match="`whole_loop` must be a bool"):
        TorchOptions(whole_loop=1)
    with pytest.raises(AttributeError):
        TorchOptions().whole_loop = False  # frozen
