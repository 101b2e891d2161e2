"""Products by a kernel: a plain Dense on a 2-D input, with the bias inside the
product on torch; any `x @ kernel + bias`; on oneDNN in torch inference."""

import keras
from keras import ops


def dense_2d(layer, x):
    """`layer(x)` for a plain `keras.layers.Dense` and a 2-D `x`, bias fused on torch.

    On torch, one `torch.addmm` adds the bias inside the product (Keras's Dense
    runs a matmul, then a separate add over the whole `(N, units)` output: at
    the Translator's output layer, 1920 x 8000 logits, that add took a fifth of
    the layer's forward time on CPU). Without gradients on the CPU (decoding),
    a large product goes through `onednn_linear`: oneDNN's product or `addmm`,
    whichever ran faster for its shape. Every other case, including other backends,
    a Dense with an activation, no bias, LoRA or quantization, calls the layer.

    Args:
        layer: a built `keras.layers.Dense`.
        x: `(N, d)`.

    Returns:
        `(N, layer.units)` in the layer's compute dtype.

    Example:

    >>> import keras, numpy as np
    >>> from keras_rnnattn.ops import dense_2d
    >>> layer = keras.layers.Dense(3)
    >>> layer.build((None, 4))
    >>> x = np.ones((2, 4), "float32")
    >>> np.allclose(keras.ops.convert_to_numpy(dense_2d(layer, x)),
    ...             keras.ops.convert_to_numpy(layer(x)), atol=1e-6)
    True
    """
    plain = (
        keras.backend.backend() == "torch"
        and layer.built
        and layer.use_bias
        and layer.activation is keras.activations.linear
        and not getattr(layer, "quantization_mode", None)
        and not getattr(layer, "lora_enabled", False)
        and len(x.shape) == 2
    )
    if not plain:
        return layer(x)
    import torch

    from keras_rnnattn._backend.kernels.onednn_linear import onednn_dense, uses_onednn

    dtype = layer.compute_dtype
    bias, x, kernel = (ops.cast(t, dtype) for t in (layer.bias, x, layer.kernel))
    if uses_onednn(x, kernel):  # torch inference on the CPU
        return onednn_dense(x, kernel, bias)
    return torch.addmm(bias, x, kernel)


def dense_plus(layer, x, bias=None):
    """`layer(x) + bias` for a `keras.layers.Dense` without a bias of its own.

    On torch, for a plain layer (no activation, LoRA or quantization), it is
    `linear(x, layer.kernel, bias)`: in inference on the CPU the product and
    the bias go to oneDNN together (an additive attention's query projection,
    W_q q + b, at every decoding step; its keys' projection, before the
    search). Everything else calls the layer.

    Args:
        layer: a built `keras.layers.Dense` with `use_bias=False`.
        x: `(..., d)`.
        bias: optional `(layer.units,)`.

    Returns:
        `(..., layer.units)` in the layer's compute dtype.

    Example:

    >>> import keras, numpy as np
    >>> layer = keras.layers.Dense(3, use_bias=False)
    >>> layer.build((None, 4))
    >>> x = np.ones((2, 4), "float32")
    >>> b = keras.ops.convert_to_tensor(np.arange(3, dtype="float32"))
    >>> np.allclose(keras.ops.convert_to_numpy(dense_plus(layer, x, b)),
    ...             keras.ops.convert_to_numpy(layer(x) + b), atol=1e-6)
    True
    """
    dtype = layer.compute_dtype
    plain = (
        keras.backend.backend() == "torch"
        and layer.built
        and not layer.use_bias
        and layer.activation is keras.activations.linear
        and not getattr(layer, "quantization_mode", None)
        and not getattr(layer, "lora_enabled", False)
    )
    if bias is not None:
        bias = ops.cast(bias, dtype)
    if not plain:
        return layer(x) if bias is None else layer(x) + bias
    return linear(ops.cast(x, dtype), ops.cast(layer.kernel, dtype), bias)


def linear(x, kernel, bias=None):
    """`ops.matmul(x, kernel) + bias`, on oneDNN in torch inference on the CPU.

    Without gradients, on torch, a float32 product on the CPU of at least
    `onednn_linear.MIN_MULTIPLY_ADDS` goes through oneDNN's product, or ATen's
    where that measured faster for its shape (a decoding step's recurrent,
    input-feeding and output products; a GRU's input projection for all
    steps, its leading axes as rows). Everything else, including the other
    backends and training, is `ops.matmul` and the add, as written.

    Args:
        x: `(..., d)`.
        kernel: `(d, units)`, of `x`'s dtype.
        bias: optional `(units,)`.

    Returns:
        `(..., units)`.

    Example:

    >>> import numpy as np
    >>> from keras_rnnattn._backend import linear
    >>> x, kernel = np.ones((2, 3), "float32"), np.ones((3, 4), "float32")
    >>> keras.ops.convert_to_numpy(linear(x, kernel, np.arange(4.0, dtype="float32")))[0]
    array([3., 4., 5., 6.], dtype=float32)
    """
    if keras.backend.backend() == "torch" and not _grad_enabled():
        from keras_rnnattn._backend.kernels.onednn_linear import (
            onednn_dense,
            uses_onednn,
        )

        x, kernel = ops.convert_to_tensor(x), ops.convert_to_tensor(kernel)
        if bias is not None:
            bias = ops.convert_to_tensor(bias)
        rows = x.reshape(-1, x.shape[-1])  # (N, d), N the product of leading axes
        if uses_onednn(rows, kernel):
            out = onednn_dense(rows, kernel, bias)  # (N, units)
            return out.reshape(*x.shape[:-1], kernel.shape[1])
    y = ops.matmul(x, kernel)
    return y if bias is None else y + bias


def _grad_enabled():
    """Torch: whether autograd records (a train step), checked before anything
    else so that training's eager steps pay nothing for `linear`'s choice."""
    import torch

    return torch.is_grad_enabled()
