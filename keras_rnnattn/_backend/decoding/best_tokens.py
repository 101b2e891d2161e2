"""The most probable token of each row, by the op each backend runs fastest."""

import keras
from keras import ops


def best_tokens(log_probs):
    """The best token of each row and its log-probability.

    TensorFlow and JAX take `ops.top_k(log_probs, 1)`: every export goes
    through TensorFlow, and `top_k` converts to TFLite where `argmax` does not.
    Torch takes `amax` (Keras's `ops.max` on torch breaks a `torch.compile`
    graph, its `take_along_axis` fixes the batch size) and, eagerly,
    `argmax`; compiled, the lowest index equal to the maximum. Both fuse
    with the softmax before them (`topk` is a kernel of its own there, about
    a tenth of a compiled greedy step on the CPU). Where several tokens tie,
    every backend takes the first (`tests/test_ops.py`).

    Args:
        log_probs: float `(B, V)`, log-probabilities or logits.

    Returns:
        `(ids, values)`: int32 `(B,)` and `(B,)` of the dtype of `log_probs`.

    Example:

    >>> log_probs = keras.ops.log(keras.ops.convert_to_tensor([[0.2, 0.8], [0.9, 0.1]]))
    >>> ids, values = best_tokens(log_probs)
    >>> keras.ops.convert_to_numpy(ids).tolist()
    [1, 0]
    """
    if keras.backend.backend() == "torch":
        best = ops.amax(log_probs, axis=-1)  # (B,)
        if op_by_op():
            return ops.cast(ops.argmax(log_probs, axis=-1), "int32"), best
        # Compiled: the first index that holds the maximum, an integer minimum
        # (inductor's CPU argmax carries an index per lane: a greedy step of
        # `benchmarks/decode.py` took 8% longer with it). The cap keeps a row
        # of NaN, which equals no maximum, in range.
        size = ops.shape(log_probs)[-1]
        positions = ops.arange(size, dtype="int32")  # (V,)
        at_best = ops.equal(log_probs, best[:, None])  # (B, V)
        ids = ops.amin(ops.where(at_best, positions, size), axis=-1)  # (B,)
        return ops.minimum(ids, size - 1), best
    values, ids = ops.top_k(log_probs, 1)  # (B, 1), (B, 1)
    return ops.cast(ids[:, 0], "int32"), values[:, 0]


def op_by_op():
    """Whether ops run one at a time, each writing out its result: eager torch.

    JAX, TensorFlow (a `tf.function`) and a `torch.compile`d step fuse
    elementwise work into the reductions that read it, so a result that is
    only reduced is never written out. Eager torch dispatches each op, so
    there the fewest ops win.

    Returns:
        bool.

    Example:

    >>> op_by_op() == (keras.backend.backend() == "torch")
    True
    """
    if keras.backend.backend() != "torch":
        return False
    import torch

    return not torch.compiler.is_compiling()


def best_log_probs(logits):
    """The best token of each row and its log-softmax value.

    Eager torch takes `log_softmax`, then `best_tokens` of it (one ATen
    kernel each, the fewest dispatches). Compiled code (JAX, TensorFlow, a
    `torch.compile`d step) takes the best logit and `-log(sum(exp(logits -
    best)))`, never writing out the `(B, V)` log-probabilities; the value is
    the log-softmax of the best token, the same up to float rounding.

    Args:
        logits: float `(B, V)`.

    Returns:
        `(ids, log_probs)`: int32 `(B,)` and `(B,)` of the dtype of `logits`.

    Example:

    >>> logits = keras.ops.convert_to_tensor([[0.0, 2.0], [1.0, 1.0]])
    >>> ids, log_probs = best_log_probs(logits)
    >>> keras.ops.convert_to_numpy(ids).tolist()[0]
    1
    >>> [round(float(v), 4) for v in keras.ops.convert_to_numpy(log_probs)]
    [-0.1269, -0.6931]
    """
    if op_by_op():
        return best_tokens(ops.log_softmax(logits, axis=-1))
    ids, best = best_tokens(logits)  # (B,), (B,)
    shifted = ops.exp(logits - ops.expand_dims(best, -1))  # (B, V)
    return ids, -ops.log(ops.sum(shifted, axis=-1))
