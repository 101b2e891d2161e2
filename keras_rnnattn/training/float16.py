"""Rounding a model's weights to float16, as a preset with float16 weights stores them."""

import keras
import numpy as np


def round_to_float16(model):
    """Rounds every floating-point weight of `model` to float16, in memory.

    `save_to_preset(weights_dtype="float16")` casts the weights only in the
    file it writes; loading casts them back to each variable's dtype. Rounding
    them first makes the model in memory the one the preset holds, so that
    every number measured before saving is the shipped model's. The variables
    keep their dtype (float32 stays float32, holding float16 values); integer
    and boolean variables are left alone.

    Args:
        model: a built Keras model (or layer).

    Returns:
        None; the weights are changed in place.

    Raises:
        ValueError: a weight beyond float16's range (about ±65504), which
            float16 cannot hold; ship such a model with float32 weights.

    Example:

    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.set_weights([np.array([[0.1]]), np.array([1 / 3])])
    >>> round_to_float16(model)
    >>> kernel, bias = model.get_weights()
    >>> kernel.dtype, float(kernel[0, 0]) == float(np.float16(0.1))
    (dtype('float32'), True)
    """
    rounded = []
    for variable in model.weights:
        value = keras.ops.convert_to_numpy(variable)
        if value.dtype.kind != "f":
            continue
        with np.errstate(over="ignore"):  # checked on the next line
            half = value.astype("float16")
        if not np.array_equal(np.isfinite(half), np.isfinite(value)):
            raise ValueError(
                f"The weight {variable.path} has values beyond float16's range "
                f"(largest magnitude {np.nanmax(np.abs(value)):.4g}): keep its "
                "weights in float32 (save_to_preset(weights_dtype=None))."
            )
        rounded.append((variable, half.astype(value.dtype)))
    for variable, value in rounded:  # all checked before any is changed
        variable.assign(value)
