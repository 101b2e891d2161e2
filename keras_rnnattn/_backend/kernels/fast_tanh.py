"""tanh as Eigen (TensorFlow's CPU kernel) computes it, for compiled torch inference."""

import keras
from keras import ops

# Eigen's `generic_fast_tanh_float`: tanh(x) ~ x P(x²) / Q(x²) on |x| <= CLAMP,
# ±1 in float32 beyond it, x itself below TINY.
CLAMP = 7.90531110763549805
TINY = 0.0004
NUMERATOR = (
    4.89352455891786e-03,
    6.37261928875436e-04,
    1.48572235717979e-05,
    5.12229709037114e-08,
    -8.60467152213735e-11,
    2.00018790482477e-13,
    -2.76076847742355e-16,
)
DENOMINATOR = (
    4.89352518554385e-03,
    2.26843463243900e-03,
    1.18534705686654e-04,
    1.19825839466702e-06,
)


def rational_tanh(x):
    """Eigen's rational approximation of tanh, in `keras.ops` (any backend).

    Within 3.3e-7 of tanh in float32 (TensorFlow's CPU kernel, Eigen's
    vectorized form of the same function, within 2.9e-7; XLA's, 2.6e-7): a
    clamp, 9 multiply-adds and a division, which a compiler vectorizes
    without a call.

    Args:
        x: float tensor.

    Returns:
        tanh(x), of `x`'s shape and dtype.

    Example:

    >>> import numpy as np
    >>> x = np.linspace(-10.0, 10.0, 101, dtype="float32")
    >>> bool(np.allclose(keras.ops.convert_to_numpy(rational_tanh(x)), np.tanh(x),
    ...                  atol=3e-7))
    True
    """
    x = ops.convert_to_tensor(x)
    clamped = ops.clip(x, -CLAMP, CLAMP)
    x2 = clamped * clamped
    p = NUMERATOR[-1]
    for a in reversed(NUMERATOR[:-1]):
        p = p * x2 + a
    q = DENOMINATOR[-1]
    for b in reversed(DENOMINATOR[:-1]):
        q = q * x2 + b
    return ops.where(ops.abs(x) < TINY, x, clamped * p / q)


def tanh(x):
    """`ops.tanh(x)`; in a compiled torch step without gradients, `rational_tanh`.

    Inductor computes `tanh` by a call into Sleef's vectorized tanh, which
    is accurate to an ulp and slow: at the `(256, 1, 15, 256)` energies of an
    additive attention's beam-4 step (`benchmarks/decode.py`'s model), one
    CPU thread, its fused tanh, product and sum took 1.21 ms, XLA's 0.43 ms
    and the rational function's 0.35 ms (the Translator's beam-4 decoding
    there: 366 sentences a second before, 473 after, with `dense_plus`).
    TensorFlow's CPU kernel computes this function; the values differ from
    Sleef's and XLA's by at most a few ulps. Eager torch (each op its own
    kernel), training, `torch.export` (ONNX has a Tanh op) and the other
    backends keep `ops.tanh`.

    Args:
        x: float tensor.

    Returns:
        tanh(x).

    Example:

    >>> import numpy as np
    >>> x = np.array([-1.0, 0.0, 0.5], "float32")  # outside a compiled step
    >>> bool(np.all(keras.ops.convert_to_numpy(tanh(x)) ==
    ...             keras.ops.convert_to_numpy(keras.ops.tanh(x))))
    True
    """
    if keras.backend.backend() == "torch":
        import torch

        compiled = torch.compiler.is_compiling()
        if compiled and not torch.is_grad_enabled():
            if not torch.compiler.is_exporting():  # ONNX has its own Tanh
                return rational_tanh(x)
    return ops.tanh(x)


def tanh_for(activation):
    """`tanh` for Keras's tanh activation, any other activation as it is: the
    recurrent cells' and the attention vector's activations.

    Args:
        activation: a Keras activation function.

    Returns:
        A function of one tensor.

    Example:

    >>> tanh_for(keras.activations.tanh) is tanh
    True
    >>> tanh_for(keras.activations.relu) is keras.activations.relu
    True
    """
    return tanh if activation is keras.activations.tanh else activation
