"""The one fence around torch's private names (checked on torch `CHECKED_ON`).

`_backend/` reaches into torch where its public API has no equivalent:
Dynamo's and inductor's configuration and counters, inductor's compiler, the
`while_loop` operator, fake tensors, oneDNN's switch and the `_foreach_` and
fused Adam kernels. Every such name is reached through a function here, so
that a torch upgrade that moves one breaks one place, named by
`tests/test_torch_private.py`, which resolves each of them.
"""

CHECKED_ON = "2.13.0"


def dynamo_config():
    """`torch._dynamo.config`: `allow_rnn`, `patch(recompile_limit=...)`."""
    import torch._dynamo

    return torch._dynamo.config


def dynamo_counters():
    """`torch._dynamo.utils.counters`: `["stats"]["unique_graphs"]`."""
    from torch._dynamo.utils import counters

    return counters


def dynamo_stance():
    """Dynamo's current stance (`torch._dynamo.eval_frame._stance`), or None."""
    import torch._dynamo.eval_frame

    return getattr(torch._dynamo.eval_frame, "_stance", None)


def dynamo_exception():
    """`torch._dynamo.exc.TorchDynamoException`, what Dynamo raises."""
    import torch._dynamo.exc

    return torch._dynamo.exc.TorchDynamoException


def comptime():
    """`torch._dynamo.comptime.comptime`: code run while Dynamo traces."""
    from torch._dynamo.comptime import comptime as run_at_trace

    return run_at_trace


def inductor_config():
    """`torch._inductor.config`: `patch`, `cpp.*` and the cache settings."""
    import torch._inductor.config as inductor

    return inductor


def compile_fx():
    """`torch._inductor.compile_fx.compile_fx`: inductor as a Dynamo backend."""
    from torch._inductor.compile_fx import compile_fx as inductor_compile

    return inductor_compile


def while_loop_op():
    """`torch._higher_order_ops.while_loop.while_loop_op`."""
    from torch._higher_order_ops.while_loop import while_loop_op as op

    return op


def unset_fake_temporarily():
    """`torch._subclasses.fake_tensor.unset_fake_temporarily`: real tensors
    made while tracing with fake ones."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily as unset

    return unset


def mkldnn_enabled():
    """Whether torch may call oneDNN (`torch._C._get_mkldnn_enabled`)."""
    import torch

    return torch._C._get_mkldnn_enabled()


def set_mkldnn_enabled(enabled):
    """Lets torch call oneDNN or not (`torch._C._set_mkldnn_enabled`)."""
    import torch

    torch._C._set_mkldnn_enabled(enabled)


def foreach(name):
    """`torch._foreach_<name>`, an op over a list of tensors (`"mul_"`, ...)."""
    import torch

    return getattr(torch, f"_foreach_{name}")


def fused_adam():
    """`torch._fused_adam_`, the fused CPU kernel of `torch.optim.Adam`."""
    import torch

    return torch._fused_adam_


# What `tests/test_torch_private.py` resolves on the installed torch.
FOREACH_OPS = ("norm", "mul_", "lerp_", "addcmul_", "sqrt", "add_", "div")
NAMES = (
    dynamo_config,
    dynamo_counters,
    dynamo_exception,
    comptime,
    inductor_config,
    compile_fx,
    while_loop_op,
    unset_fake_temporarily,
    fused_adam,
)
