"""Every choice the package makes by Keras backend, in one private package.

Outside this package the library does not branch on `keras.backend.backend()`,
but where a file says in a comment why (metadata that records the backend,
export's choice of a TensorFlow subprocess, the seeded sampler);
`tests/test_package.py` keeps that list. Each function here is a driver choice
that never changes a result: which kernel runs a recurrence, whether a loop
over time is `ops.scan` or a Python loop, whether a compiled torch train step
runs a fused recurrence as an operator of its graph or at a graph break, how
often a decoding loop reads its
stop condition and whether torch compiles its step and the encoder before it
(and on the CPU its steps as one `while_loop`, on an NVIDIA GPU its blocks of
steps as replays of one CUDA graph), which op picks the best token,
which kernel updates Adam's weights and clips their gradients, whether ops run
one at a time (eager torch), which op computes a cross-entropy and its gradient,
how a decoding function is compiled, whether a train step may branch with a
cond, whether a Dense fuses its bias and which library multiplies by a kernel, how an
ensemble averages its members' probabilities, how an
additive attention's score multiplies by its vector, how compiled torch
inference computes tanh, whether loading a preset
skips the variables' initializers, and a scalar made on the device rather than
copied from the host, the name of the accelerator a training run records, and
the global random generator a resumed run restores.

It is in parts: `kernels/` (which op computes a layer's or a loss's numbers),
`decoding/` (how a generation loop runs), `experimental/` (torch paths off by
default until a GPU check decides), `options.py` (`TorchOptions`, the torch
paths taken, set in a block with `torch_options(...)`, never by flipping a
module's global) and `_torch_private.py` (the one fence around torch's private
names). This module is the face: the rest of the package imports from here.
"""

from keras_rnnattn._backend.decoding.best_tokens import (
    best_log_probs,
    best_tokens,
    op_by_op,
)
from keras_rnnattn._backend.decoding.jit import (
    compiled,
    cond_differentiable,
    no_grad,
    own_trace_counts,
)
from keras_rnnattn._backend.decoding.loops import (
    compiled_stage,
    compiled_steps,
    decoding_loop,
)
from keras_rnnattn._backend.decoding.scalars import device_scalar
from keras_rnnattn._backend.device import accelerator_name
from keras_rnnattn._backend.initializers import initializers_compile
from keras_rnnattn._backend.kernels.adam import (
    adam_update,
    adam_variable_update,
    clip_by_global_norm,
    clip_by_norm,
)
from keras_rnnattn._backend.kernels.additive_scores import (
    additive_energies,
    additive_scores,
)
from keras_rnnattn._backend.kernels.cross_entropy import sparse_cross_entropy
from keras_rnnattn._backend.kernels.fast_tanh import tanh, tanh_for
from keras_rnnattn._backend.kernels.fused_dense import dense_2d, dense_plus, linear
from keras_rnnattn._backend.kernels.log_mean_exp import log_mean_exp
from keras_rnnattn._backend.kernels.rnn_kernels import (
    gate_step,
    loops_in_python,
    own_rnn_kernels,
    rnn_kind,
    run_rnn,
    time_loop,
)
from keras_rnnattn._backend.options import (
    TorchOptions,
    current_torch_options,
    torch_options,
)
from keras_rnnattn._backend.rng_state import global_rng_state, set_global_rng_state

__all__ = [
    "TorchOptions",
    "current_torch_options",
    "torch_options",
    "accelerator_name",
    "adam_update",
    "adam_variable_update",
    "additive_energies",
    "additive_scores",
    "best_log_probs",
    "best_tokens",
    "clip_by_global_norm",
    "clip_by_norm",
    "compiled",
    "compiled_stage",
    "compiled_steps",
    "cond_differentiable",
    "decoding_loop",
    "dense_2d",
    "dense_plus",
    "device_scalar",
    "gate_step",
    "global_rng_state",
    "initializers_compile",
    "linear",
    "log_mean_exp",
    "loops_in_python",
    "no_grad",
    "op_by_op",
    "own_rnn_kernels",
    "own_trace_counts",
    "rnn_kind",
    "run_rnn",
    "set_global_rng_state",
    "sparse_cross_entropy",
    "tanh",
    "tanh_for",
    "time_loop",
]
