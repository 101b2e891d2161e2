"""The most probable token of each row, by the op each backend runs fastest."""

import keras
from keras import ops


def best_tokens(log_probs):
    """The best token of each row and its log-probability.

    TensorFlow and JAX take `ops.top_k(log_probs, 1)`: every export goes
    through TensorFlow, and `top_k` converts to TFLite where `argmax` does not.
    Torch takes `argmax` and `amax` (Keras's `ops.max` on torch breaks a
    `torch.compile` graph, its `take_along_axis` fixes the batch size), which
    `torch.compile` fuses with the softmax before them (`topk` is a kernel of its own there, about a tenth of
    a compiled greedy step on the CPU). Where several tokens tie, the backend's
    op picks one of them.

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
        ids = ops.argmax(log_probs, axis=-1)  # (B,)
        return ops.cast(ids, "int32"), ops.amax(log_probs, axis=-1)
    values, ids = ops.top_k(log_probs, 1)  # (B, 1), (B, 1)
    return ops.cast(ids[:, 0], "int32"), values[:, 0]
