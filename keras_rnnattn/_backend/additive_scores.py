"""The last product of an additive attention's score, vᵀ tanh(...), by backend."""

import keras
from keras import ops

from keras_rnnattn._backend.best_tokens import op_by_op


def additive_scores(hidden, v):
    """`hidden @ v` over the last axis: the scores vᵀ h of an additive attention.

    A compiled torch function (a decoding step under `jit_compile=True`)
    multiplies and sums, which inductor fuses with the `tanh` before it and
    the softmax after it into one kernel: the `(B, T, S, units)` tensor is
    never written out (on `benchmarks/decode.py`'s model with beam 4, one CPU
    thread, 1.03 ms a step against 1.29 ms for the `tanh` kernel, the
    matrix-vector product and the softmax kernel). Everywhere else a
    `matmul` by the column `v`: eager torch runs each op on its own, where
    the product is one BLAS call (143 us against 509 us for the multiply and
    the sum at `(256, 1, 15, 256)`), and JAX and TensorFlow keep the results
    they had.

    Args:
        hidden: `(..., units)`.
        v: `(units,)`, of the dtype of `hidden`.

    Returns:
        `(...)`.

    Example:

    >>> import numpy as np
    >>> hidden = np.ones((2, 3, 4), "float32")
    >>> v = np.arange(4, dtype="float32")
    >>> keras.ops.convert_to_numpy(additive_scores(hidden, v)).tolist()
    [[6.0, 6.0, 6.0], [6.0, 6.0, 6.0]]
    """
    if keras.backend.backend() == "torch" and not op_by_op():
        return ops.sum(hidden * v, axis=-1)
    return ops.matmul(hidden, ops.expand_dims(v, -1))[..., 0]
