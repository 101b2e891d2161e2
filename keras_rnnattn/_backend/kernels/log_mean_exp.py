"""The log of the mean of several probability tables, by the ops each backend
runs fastest."""

import math

from keras import ops

from keras_rnnattn._backend.decoding.best_tokens import op_by_op


def log_mean_exp(log_probs):
    """log(1/M sum_m exp(log_probs[m])) of M tensors of one shape, float32.

    JAX, TensorFlow and a compiled torch step take `logsumexp` over the
    stacked tensors, which they fuse into one pass (and which every export
    format converts: ONNX has no `Log1p` for `logaddexp`). Eager torch folds
    the tensors in one at a time with `logaddexp`, one ATen kernel each:
    `logsumexp` there writes out the stack and its difference from the
    maximum, at every decoding step of an ensemble (the two-member
    `ding_de_en_bahdanau` preset translated 1.21x as many sentences a second
    greedy and 1.12x with beam 4 on one CPU thread: the median ratio of four
    `benchmarks/preset_decode.py` runs of each way in turn). The two agree up
    to float rounding.

    Args:
        log_probs: a list of M >= 1 float tensors of one shape.

    Returns:
        A float32 tensor of that shape.

    Example:

    >>> import numpy as np
    >>> halves = [np.log(np.array([[0.2, 0.8]], "float32")),
    ...           np.log(np.array([[0.6, 0.4]], "float32"))]
    >>> mean = np.exp(ops.convert_to_numpy(log_mean_exp(halves)))
    >>> [round(float(p), 4) for p in mean[0]]
    [0.4, 0.6]
    """
    log_probs = [ops.cast(p, "float32") for p in log_probs]
    if len(log_probs) == 1:
        return log_probs[0]
    log_count = math.log(len(log_probs))
    if op_by_op():
        total = log_probs[0]
        for log_prob in log_probs[1:]:
            total = ops.logaddexp(total, log_prob)
        return total - log_count
    return ops.logsumexp(ops.stack(log_probs, axis=0), axis=0) - log_count
