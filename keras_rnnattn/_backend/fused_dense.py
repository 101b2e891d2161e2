"""A plain Dense on a 2-D input, with the bias inside the product on torch."""

import keras
from keras import ops


def dense_2d(layer, x):
    """`layer(x)` for a plain `keras.layers.Dense` and a 2-D `x`, bias fused on torch.

    On torch, one `torch.addmm` adds the bias inside the product (Keras's Dense
    runs a matmul, then a separate add over the whole `(N, units)` output: at
    the Translator's output layer, 1920 x 8000 logits, that add took a fifth of
    the layer's forward time on CPU). In a compiled torch step without
    gradients on the CPU (a decoding step), a large product goes through
    `packed_linear`: oneDNN's product with the kernel packed once, or `addmm`,
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

    from keras_rnnattn._backend.packed_linear import packed_dense, packs

    dtype = layer.compute_dtype
    bias, x, kernel = (ops.cast(t, dtype) for t in (layer.bias, x, layer.kernel))
    if packs(x, kernel):  # a compiled decoding step on the CPU
        return packed_dense(x, kernel, bias)
    return torch.addmm(bias, x, kernel)
