"""Which op computes a cross-entropy from logits on each backend."""

import keras
from keras import ops

from keras_rnnattn._backend.kernels.torch_cross_entropy import (
    sparse_cross_entropy_torch,
)


def sparse_cross_entropy(labels, logits):
    """`-log softmax(logits)[label]` of each row, from logits.

    The same values on every backend; the backends differ in the fastest way.
    TensorFlow: the loss and its gradient from one softmax kernel
    (`tf_cross_entropy.py`; 42 ms against 146 ms for TensorFlow's fused
    sparse cross-entropy op, forward and backward at 1,920 x 8,000 on one CPU
    thread). Torch: an autograd function
    whose backward turns the saved log-probabilities into the gradient in place
    (`torch_cross_entropy.py`; 48 ms against 97 ms for PyTorch's fused
    `cross_entropy`, forward and backward at 1,920 x 8,000 on one CPU thread).
    JAX: `logsumexp(logits) - logits[label]`; Keras's JAX op multiplies a
    one-hot `(N, V)` with the log-softmax, and its forward and backward took
    100 ms against 41 ms at 1,920 x 8,000 logits on one CPU thread (the output
    layer of `benchmarks/seq2seq_train.py`'s fast/big run), and its gradient's
    exponential ran unfused.

    Args:
        labels: int `(N,)`, each in `[0, V)`.
        logits: float `(N, V)`.

    Returns:
        `(N,)`, in the dtype of `logits`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> logits = np.array([[0.0, 0.0], [0.0, np.log(3.0)]], "float32")
    >>> loss = sparse_cross_entropy(np.array([0, 1]), logits)
    >>> [round(float(x), 4) for x in ops.convert_to_numpy(loss)]  # -log 1/2, -log 3/4
    [0.6931, 0.2877]
    """
    if keras.backend.backend() == "torch":
        return sparse_cross_entropy_torch(
            ops.convert_to_tensor(labels), ops.convert_to_tensor(logits)
        )
    if keras.backend.backend() == "tensorflow":
        from keras_rnnattn._backend.kernels.tf_cross_entropy import (
            sparse_cross_entropy_tf,
        )

        return sparse_cross_entropy_tf(labels, logits)
    if keras.backend.backend() != "jax":
        return ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    labels = ops.cast(labels, "int32")
    picked = ops.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]  # (N,)
    return ops.logsumexp(logits, axis=-1) - picked
