"""An additive attention's score vᵀ tanh(q + k), and its last product, by backend."""

import keras
from keras import ops

from keras_rnnattn._backend.decoding.best_tokens import op_by_op
from keras_rnnattn._backend.kernels.fast_tanh import tanh


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


def additive_energies(query, processed_key, v):
    """The scores vᵀ tanh(q_t + k_s) of an additive attention, `(B, T, S)`.

    The `(B, T, S, units)` tensor of the energies' tanh is the largest of the
    score. Autodiff keeps it for the backward pass; on JAX this function is a
    `jax.checkpoint`, so the backward pass computes it again from q and k
    instead (XLA fuses that into the gradient's own kernel), and a decoder's
    scan over T steps no longer stores one for every step (at
    `benchmarks/seq2seq_train.py`'s feeding/big size, 118 MB a train step
    zeroed, written and read back). Elsewhere it is `additive_scores` of the
    tanh.

    Args:
        query: `(B, T, units)`, W_q q + b.
        processed_key: `(B, S, units)`, W_k k.
        v: `(units,)`, of the dtype of `query`.

    Returns:
        `(B, T, S)`.

    Example:

    >>> import numpy as np
    >>> q = np.zeros((1, 2, 3), "float32")
    >>> k = np.full((1, 4, 3), 100.0, "float32")  # tanh = 1
    >>> v = np.ones((3,), "float32")
    >>> keras.ops.convert_to_numpy(additive_energies(q, k, v)).tolist()
    [[[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]]
    """

    def scores(query, processed_key, v):
        hidden = tanh(
            ops.expand_dims(query, 2) + ops.expand_dims(processed_key, 1)
        )  # (B, T, S, units)
        return additive_scores(hidden, v)

    if keras.backend.backend() == "jax":
        import jax

        return jax.checkpoint(scores)(query, processed_key, v)
    return scores(query, processed_key, v)
