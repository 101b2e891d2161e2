"""Trained `tfa.seq2seq.AttentionWrapper` weights into an `AttentionDecoder`.

Two halves, one on each side of the move:

- `tfa_wrapper_weights(wrapper)` runs where the tfa model lives (TensorFlow 2
  with tensorflow-addons; this module imports neither Keras nor TensorFlow) and
  reads the wrapper's weights by role into a flat dict of NumPy arrays, which
  `numpy.savez` stores without pickling;
- `set_tfa_weights(decoder, weights)` runs under Keras 3 and writes them into
  an `AttentionDecoder` built with the same configuration (see
  docs/migrating-from-tfa.md), reordering what differs:

| tfa | keras-rnnattn |
|---|---|
| the cell's `get_weights()` (kernel over [x_t; a_{t-1}]) | `decoder.cell` (the same order and layout) |
| `BahdanauAttention.memory_layer` / `query_layer` kernels | `key_dense` / `query_dense` kernels |
| `attention_v`, `attention_g`, `attention_b` | `v`, `g`, `b` (`b` is 0 without `normalize`) |
| `LuongAttention.memory_layer` kernel, times `attention_g` with `scale=True` | `LuongAttention("general").key_dense` kernel |
| `BahdanauMonotonicAttention`: as `BahdanauAttention`, and `attention_score_bias` | `BahdanauMonotonicAttention`: the same, and `score_bias` |
| `LuongMonotonicAttention.memory_layer` kernel, `attention_g`, `attention_score_bias` | `LuongMonotonicAttention.key_dense` kernel, `g`, `score_bias` |
| `attention_layer` kernel, rows over [h_t; c_t] | `attention_dense` (or `attention_layer`) kernel, rows over [c_t; h_t]: the two row blocks swap |

The keys of the dict: `cell/{j}` (the j-th array of the cell's `get_weights()`,
a stack's cells in order), `mechanism_{i}/kind` (`"bahdanau"`, `"luong"`,
`"bahdanau_monotonic"` or `"luong_monotonic"`),
`mechanism_{i}/memory_kernel`, `mechanism_{i}/query_kernel`,
`mechanism_{i}/attention_v`, `mechanism_{i}/attention_g`,
`mechanism_{i}/attention_b`, `mechanism_{i}/attention_score_bias` (those the
mechanism has), and
`attention_layer_{i}/{j}` (the j-th array of attention layer i).
"""

import numpy as np


def tfa_wrapper_weights(wrapper):
    """The weights of a tfa `AttentionWrapper`, by role, as NumPy arrays.

    Runs beside tensorflow-addons (0.23): it reads the wrapper's cell,
    attention mechanisms and attention layers through their attributes.

    Args:
        wrapper: a `tfa.seq2seq.AttentionWrapper` that has been called once
            (so that its weights exist).

    Returns:
        A flat dict of str to `np.ndarray` (keys in the module docstring), for
        `numpy.savez` and `set_tfa_weights`.

    Example (where tfa is installed):

        weights = tfa_wrapper_weights(attention_wrapper)
        numpy.savez("tfa_decoder.npz", **weights)
    """
    weights = {}
    for j, array in enumerate(wrapper._cell.get_weights()):
        weights[f"cell/{j}"] = np.asarray(array)
    kinds = {
        "BahdanauAttention": "bahdanau",
        "LuongAttention": "luong",
        "BahdanauMonotonicAttention": "bahdanau_monotonic",
        "LuongMonotonicAttention": "luong_monotonic",
    }
    for i, mechanism in enumerate(wrapper._attention_mechanisms):
        kind = type(mechanism).__name__
        if kind not in kinds:
            raise ValueError(
                f"Only {', '.join(kinds)} port to keras-rnnattn weights this way. "
                f"Received a {kind} as mechanism {i}."
            )
        prefix = f"mechanism_{i}/"
        weights[prefix + "kind"] = np.array(kinds[kind])
        weights[prefix + "memory_kernel"] = np.asarray(mechanism.memory_layer.kernel)
        if getattr(mechanism, "query_layer", None) is not None:
            weights[prefix + "query_kernel"] = np.asarray(mechanism.query_layer.kernel)
        names = ("attention_v", "attention_g", "attention_b", "attention_score_bias")
        for name in names:
            value = getattr(mechanism, name, None)
            if value is not None:
                weights[prefix + name] = np.asarray(value)
    for i, layer in enumerate(wrapper._attention_layers or []):
        for j, array in enumerate(layer.get_weights()):
            weights[f"attention_layer_{i}/{j}"] = np.asarray(array)
    return weights


def set_tfa_weights(decoder, weights):
    """Writes `tfa_wrapper_weights` into an `AttentionDecoder`.

    The decoder must have tfa's structure: the same cell (or stack), one
    mechanism per tfa mechanism in the same order (`BahdanauAttention(units,
    normalize=...)` for tfa's Bahdanau, `LuongAttention("general")` for tfa's
    Luong, `BahdanauMonotonicAttention(units, normalize=...)` and
    `LuongMonotonicAttention(scale=...)` for tfa's monotonic mechanisms, with
    tfa's `mode`), `query="current"`, input feeding, and W_c of the same sizes
    (`attention_layer_size`, `attention_activation=None` for tfa's linear
    layer) or a layer of the same kind as tfa's `attention_layer`. It must be
    built (call it once, or `decoder.build(inputs_shape, memory_shape)`).

    Args:
        decoder: a built `keras_rnnattn.layers.AttentionDecoder`.
        weights: the dict of `tfa_wrapper_weights` (or an `np.load`ed file).

    Returns:
        The decoder.

    Example:

    >>> import numpy as np
    >>> from keras_rnnattn.layers import AttentionDecoder, LuongAttention
    >>> decoder = AttentionDecoder(
    ...     cell="lstm", units=4, attention=LuongAttention("general"),
    ...     query="current", attention_layer_size=3, attention_activation=None)
    >>> decoder.build((None, None, 2), (None, None, 5))
    >>> rng = np.random.default_rng(0)
    >>> tfa_weights = {  # as tfa_wrapper_weights reads them from tfa
    ...     "cell/0": rng.normal(size=(2 + 3, 16)),  # [x_t; a_{t-1}]
    ...     "cell/1": rng.normal(size=(4, 16)), "cell/2": np.zeros(16),
    ...     "mechanism_0/kind": np.array("luong"),
    ...     "mechanism_0/memory_kernel": rng.normal(size=(5, 4)),
    ...     "attention_layer_0/0": rng.normal(size=(4 + 5, 3)),  # [h_t; c_t]
    ... }
    >>> _ = set_tfa_weights(decoder, tfa_weights)
    >>> kernel = decoder.attention_dense.kernel.numpy()
    >>> bool(np.allclose(kernel[:5], tfa_weights["attention_layer_0/0"][4:]))
    True
    """
    from keras_rnnattn.layers.bahdanau_attention import BahdanauAttention
    from keras_rnnattn.layers.bahdanau_monotonic_attention import (
        BahdanauMonotonicAttention,
    )
    from keras_rnnattn.layers.luong_attention import LuongAttention
    from keras_rnnattn.layers.luong_monotonic_attention import (
        LuongMonotonicAttention,
    )

    weights = {key: np.asarray(weights[key]) for key in weights}
    if not decoder.built:
        raise ValueError(
            "Build the decoder before loading weights into it: call it once, or "
            "`decoder.build(inputs_shape, memory_shape)`."
        )
    if decoder.query != "current" or not decoder.input_feeding:
        raise ValueError(
            "tfa's AttentionWrapper queries attention with the cell's current "
            "output and feeds the attention back: build the decoder with "
            "query='current' and input_feeding=True. Received: "
            f"query={decoder.query!r}, input_feeding={decoder.input_feeding}"
        )
    cell = [weights[f"cell/{j}"] for j in range(_count(weights, "cell/"))]
    _assign(decoder.cell.weights, cell, "the cell")
    mechanisms = decoder.mechanisms
    if _count_mechanisms(weights) != len(mechanisms):
        raise ValueError(
            f"The tfa wrapper has {_count_mechanisms(weights)} attention "
            f"mechanism(s) and the decoder {len(mechanisms)}: give the decoder one "
            "attention per tfa mechanism, in the same order."
        )
    for i, mechanism in enumerate(mechanisms):
        prefix = f"mechanism_{i}/"
        kind = str(weights[prefix + "kind"])
        monotonic = kind.endswith("_monotonic")
        monotonic_layers = (BahdanauMonotonicAttention, LuongMonotonicAttention)
        if monotonic != isinstance(mechanism, monotonic_layers):
            raise ValueError(
                f"tfa's mechanism {i} is {kind}: build "
                + (
                    "BahdanauMonotonicAttention or LuongMonotonicAttention"
                    if monotonic
                    else "BahdanauAttention or LuongAttention"
                )
                + f". Received: {type(mechanism).__name__}."
            )
        if kind == "luong_monotonic" and type(mechanism) is LuongMonotonicAttention:
            scaled = prefix + "attention_g" in weights
            if scaled != mechanism.scale:
                raise ValueError(
                    f"tfa's mechanism {i} has scale={scaled}: build "
                    f"LuongMonotonicAttention(scale={scaled})."
                )
            values = [weights[prefix + "memory_kernel"]]
            targets = [mechanism.key_dense.kernel]
            if scaled:
                values.append(weights[prefix + "attention_g"])
                targets.append(mechanism.g)
            values.append(weights[prefix + "attention_score_bias"])
            targets.append(mechanism.score_bias)
            _assign(targets, values, f"Luong monotonic mechanism {i}")
        elif (kind == "bahdanau" and type(mechanism) is BahdanauAttention) or (
            kind == "bahdanau_monotonic"
            and type(mechanism) is BahdanauMonotonicAttention
        ):
            normalized = prefix + "attention_g" in weights
            if normalized != mechanism.normalize:
                raise ValueError(
                    f"tfa's mechanism {i} has normalize={normalized}: build "
                    f"BahdanauAttention(units, normalize={normalized})."
                )
            bias = weights.get(prefix + "attention_b")
            values = [
                weights[prefix + "query_kernel"],
                weights[prefix + "memory_kernel"],
                weights[prefix + "attention_v"],
                np.zeros_like(weights[prefix + "attention_v"])
                if bias is None
                else bias,
            ]
            targets = [mechanism.query_dense.kernel, mechanism.key_dense.kernel]
            targets += [mechanism.v, mechanism.b]
            if normalized:
                values.append(weights[prefix + "attention_g"])
                targets.append(mechanism.g)
            if monotonic:
                values.append(weights[prefix + "attention_score_bias"])
                targets.append(mechanism.score_bias)
            _assign(targets, values, f"Bahdanau mechanism {i}")
        elif (
            kind == "luong"
            and type(mechanism) is LuongAttention
            and mechanism.score == "general"
            and not mechanism.scale
        ):
            kernel = weights[prefix + "memory_kernel"]
            scale = weights.get(prefix + "attention_g")
            if scale is not None:  # g q·(W m) = q·((g W) m)
                kernel = kernel * scale
            _assign([mechanism.key_dense.kernel], [kernel], f"Luong mechanism {i}")
        else:
            fix = {
                "bahdanau": "BahdanauAttention(units, normalize=...)",
                "luong": "LuongAttention('general') (scale=False; tfa's scale "
                "folds into the key kernel)",
                "bahdanau_monotonic": "BahdanauMonotonicAttention(units, "
                "normalize=...)",
                "luong_monotonic": "LuongMonotonicAttention(scale=...)",
            }.get(kind, kind)
            raise ValueError(
                f"tfa's mechanism {i} is {kind}: build it as {fix}. "
                f"Received: {type(mechanism).__name__}."
            )
    layers = decoder._readout_layers()
    count = sum(
        1
        for key in weights
        if key.startswith("attention_layer_") and key.endswith("/0")
    )
    if count != (0 if layers is None else len(layers)):
        raise ValueError(
            f"The tfa wrapper has {count} attention layer(s) and the decoder "
            f"{0 if layers is None else len(layers)}: set the decoder's "
            "`attention_layer_size` to tfa's (None for none)."
        )
    for i, layer in enumerate(layers or []):
        prefix = f"attention_layer_{i}/"
        arrays = [weights[f"{prefix}{j}"] for j in range(_count(weights, prefix))]
        # tfa's layer reads [h_t; c_t], the decoder's [c_t; h_t].
        units = decoder.units
        arrays[0] = np.concatenate([arrays[0][units:], arrays[0][:units]], axis=0)
        _assign(layer.weights, arrays, f"attention layer {i}")
    return decoder


def _count(weights, prefix):
    return sum(1 for key in weights if key.startswith(prefix))


def _count_mechanisms(weights):
    return sum(
        1 for key in weights if key.startswith("mechanism_") and key.endswith("/kind")
    )


def _assign(variables, arrays, what):
    variables = list(variables)
    if len(variables) != len(arrays):
        raise ValueError(
            f"{what}: tfa has {len(arrays)} weight arrays and the decoder "
            f"{len(variables)}: build the same kind of layer."
        )
    for variable, array in zip(variables, arrays):
        if tuple(variable.shape) != tuple(array.shape):
            raise ValueError(
                f"{what}: the decoder's {variable.path} has shape "
                f"{tuple(variable.shape)} and tfa's weight {tuple(array.shape)}: "
                "build the decoder with tfa's sizes."
            )
        variable.assign(array.astype(variable.dtype))
