"""The mean of the weights of several checkpoints of one training run."""

import os
import warnings

import keras
import numpy as np

from keras_rnnattn.presets import load_preset
from keras_rnnattn.presets.catalog import CONFIG_FILE, WEIGHTS_FILE


def average_weights(sources, template=None):
    """The element-wise mean of the weights of several checkpoints of one run.

    Averaging the last checkpoints of a run (Vaswani et al. 2017; OpenNMT's
    `average_models.py`, fairseq's `average_checkpoints.py`) costs nothing
    and usually validates better than any one of them. All sources must be
    the same network.

    Args:
        sources: a list of at least one checkpoint, each a Keras model, a
            preset folder (or name), a `.keras` file, or a `.weights.h5` file
            (`model.save_weights`), which is read into `template`.
        template: a built Keras model of the same network, needed only for
            `.weights.h5` files when no other source is a model, a preset or a
            `.keras` file (the first of those serves then). Its weights are
            left as they were.

    Returns:
        list of NumPy arrays, the mean weights in the order of
        `template.get_weights()` (or the first model's), for `set_weights`.

    Raises:
        ValueError: no source; a `.weights.h5` file without a model to read
            it into; sources of different networks (the message names the
            source and the shapes).

    Example:

    >>> import keras, numpy as np
    >>> models = [keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    ...           for _ in range(2)]
    >>> models[0].set_weights([np.array([[1.0]]), np.array([0.0])])
    >>> models[1].set_weights([np.array([[3.0]]), np.array([1.0])])
    >>> [w.tolist() for w in average_weights(models)]
    [[[2.0]], [0.5]]
    """
    sources = list(sources) if isinstance(sources, (list, tuple)) else [sources]
    if not sources:
        raise ValueError("`average_weights` needs at least one source. Received: []")
    if template is None:
        template = next((s for s in sources if not _is_weights_file(s)), None)
        if template is not None and not isinstance(template, keras.Model):
            template = _model(template)
    total, shapes = None, None
    for source in sources:
        weights = _weights(source, template)
        if total is None:
            total = [np.asarray(w, dtype="float64") for w in weights]
            shapes = [w.shape for w in weights]
            continue
        got = [w.shape for w in weights]
        if got != shapes:
            raise ValueError(
                f"{_name(source)} is another network than the first source "
                f"({_first_difference(got, shapes)}): average checkpoints of "
                "one run only."
            )
        for i, w in enumerate(weights):
            total[i] += w
    dtypes = [w.dtype for w in _weights(sources[0], template)]
    return [(t / len(sources)).astype(d) for t, d in zip(total, dtypes)]


def _is_weights_file(source):
    return isinstance(source, (str, os.PathLike)) and os.fspath(source).endswith(
        ".weights.h5"
    )


def _model(source):
    """A model from a preset folder or name, or from a `.keras` file."""
    path = os.fspath(source)
    if path.endswith(".keras"):
        return keras.saving.load_model(path, safe_mode=True, compile=False)
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, CONFIG_FILE)):
        raise ValueError(
            f"{path} is not a preset folder (no {CONFIG_FILE}): pass its weights "
            f"file ({os.path.join(path, WEIGHTS_FILE)}) with a `template` model."
        )
    return load_preset(path)


def _weights(source, template):
    if isinstance(source, keras.Model):
        return source.get_weights()
    if not _is_weights_file(source):
        return _model(source).get_weights()
    if template is None:
        raise ValueError(
            f"{_name(source)} holds weights without their network: pass "
            "`template=` a model of the same network (or a preset or .keras "
            "source among `sources`)."
        )
    kept = template.get_weights()
    try:
        with warnings.catch_warnings():
            # A compiled template's optimizer has variables; a checkpoint of
            # weights has none for it, and none are wanted.
            warnings.filterwarnings(
                "ignore", message="Skipping variable loading for optimizer"
            )
            template.load_weights(os.fspath(source))
        return template.get_weights()
    finally:
        template.set_weights(kept)


def _name(source):
    return type(source).__name__ if isinstance(source, keras.Model) else repr(source)


def _first_difference(got, expected):
    for i, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return f"weight {i} is {a}, the first source's {b}"
    return f"{len(got)} weights against {len(expected)}"
