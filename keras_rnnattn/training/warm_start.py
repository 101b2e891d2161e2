"""Starting a model from a preset's weights: fine-tuning, or a warm restart."""

import keras
import numpy as np

from keras_rnnattn.presets import load_preset, preset_tokenizers
from keras_rnnattn.presets.catalog import find_preset, preset_metadata


def init_from(model, preset_or_folder, extend_vocabulary=False):
    """Gives `model` the weights of a preset of the same architecture.

    The model keeps its own optimizer (compiled or not): this starts a new
    training run from the preset's weights (fine-tuning, or a warm restart
    with a fresh optimizer and the recipe's schedule), it does not resume one
    (see `TrainingRun` for that). The two models must be the same network:
    the same number of variables with the same shapes, in the same order,
    and, where both hold `keras_rnnattn.text` tokenizers, the same
    vocabularies (the same shapes with other token ids would be silently
    wrong).

    With `extend_vocabulary=True` the model's vocabularies may go on past the
    preset's: each tokenizer holds the preset's tokens with the same ids,
    then new ones (a British G2P started from the American one, with the
    symbols only British English has). A variable that is larger along an
    axis (an embedding's rows, an output layer's columns) gets the preset's
    values in its leading slice and keeps its own initial values for the
    new tokens.

    Args:
        model: a built Keras model.
        preset_or_folder: a preset name (such as `"misaki_us_g2p"`), a preset
            folder, or a hub handle (`hf://<owner>/<name>`).
        extend_vocabulary: bool, let the model's vocabularies extend the
            preset's (see above). Defaults to `False`.

    Returns:
        dict, the preset's `metadata.json` (its `"training_history"` says how
        the weights were trained; see `training_history`).

    Raises:
        ValueError: the architectures differ; the message names the first
            variable that differs and both shapes, or the tokenizer whose
            vocabulary differs.

    Example:

    >>> import keras, tempfile
    >>> from keras_rnnattn.presets import save_preset
    >>> def network():
    ...     return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> trained, fresh = network(), network()
    >>> folder = save_preset(trained, tempfile.mkdtemp())
    >>> _ = init_from(fresh, folder)
    >>> all((a == b).all() for a, b in zip(fresh.get_weights(), trained.get_weights()))
    True
    >>> try:
    ...     init_from(keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]),
    ...               folder)
    ... except ValueError as error:
    ...     print("has the shape (4, 2); the preset" in str(error))
    True
    """
    if not isinstance(model, keras.Model) or not model.built:
        raise ValueError(
            "`init_from` takes a built Keras model (build or call it first). "
            f"Received: model={model!r}"
        )
    folder = find_preset(preset_or_folder)
    source = load_preset(folder)
    _check_tokenizers(model, source, preset_or_folder, extend_vocabulary)
    ours, theirs = model.weights, source.weights
    for mine, other in zip(ours, theirs):
        if not _fits(tuple(other.shape), tuple(mine.shape), extend_vocabulary):
            raise ValueError(
                f"The model's variable {mine.path} has the shape "
                f"{tuple(mine.shape)}; the preset {preset_or_folder!r} has "
                f"{tuple(other.shape)} there ({other.path}): build the model "
                "with the preset's configuration (its config.json) to start "
                "from its weights."
            )
    if len(ours) != len(theirs):
        extra = (ours if len(ours) > len(theirs) else theirs)[
            min(len(ours), len(theirs))
        ]
        raise ValueError(
            f"The model has {len(ours)} variables and the preset "
            f"{preset_or_folder!r} {len(theirs)}: the first unmatched one is "
            f"{extra.path} {tuple(extra.shape)}. Build the model with the "
            "preset's configuration (its config.json) to start from its weights."
        )
    for mine, other in zip(ours, theirs):
        value = np.asarray(keras.ops.convert_to_numpy(other), mine.dtype)
        if value.shape != tuple(mine.shape):  # a vocabulary extended
            grown = np.array(keras.ops.convert_to_numpy(mine))
            grown[tuple(slice(0, n) for n in value.shape)] = value
            value = grown
        mine.assign(value)
    return preset_metadata(folder)


def _fits(theirs, mine, extend_vocabulary):
    """Whether the preset's variable shape `theirs` can fill `mine`."""
    if theirs == mine:
        return True
    return (
        extend_vocabulary
        and len(theirs) == len(mine)
        and all(a <= b for a, b in zip(theirs, mine))
    )


# How a tokenizer reads letters it lacks, not which id a token has.
READING_KEYS = ("fold_letters", "folding")


def _ids_config(tokenizer):
    config = tokenizer.get_config()
    return {k: v for k, v in config.items() if k not in READING_KEYS}


def _check_tokenizers(model, source, name, extend_vocabulary=False):
    mine, theirs = preset_tokenizers(model), preset_tokenizers(source)
    for attribute in sorted(set(mine) & set(theirs)):
        ours, other = _ids_config(mine[attribute]), _ids_config(theirs[attribute])
        if extend_vocabulary and _extends(mine[attribute], theirs[attribute]):
            ours.pop("vocabulary", None)
            other.pop("vocabulary", None)
        if ours != other:
            differs = sorted(
                key for key in set(ours) | set(other) if ours.get(key) != other.get(key)
            )
            raise ValueError(
                f"The model's {attribute} differs from the preset {name!r}'s "
                f"(in {', '.join(differs)}): token ids would mean other tokens. "
                f"Build the model with the preset's tokenizers (the preset's "
                f"model.{attribute}) to start from its weights"
                + (
                    "."
                    if extend_vocabulary
                    else ", or pass extend_vocabulary=True where its "
                    "vocabulary goes on past the preset's."
                )
            )


def _extends(tokenizer, preset_tokenizer):
    """Whether `tokenizer`'s tokens are the preset's, then new ones."""
    mine = getattr(tokenizer.vocabulary, "tokens", None)
    theirs = getattr(preset_tokenizer.vocabulary, "tokens", None)
    return (
        mine is not None
        and theirs is not None
        and len(mine) >= len(theirs)
        and mine[: len(theirs)] == theirs
    )
