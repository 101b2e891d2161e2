"""Saving and loading a preset folder: config, weights, tokenizers, metadata."""

import datetime
import json
import os

import keras
import numpy as np

from keras_rnnattn._keras_private import (
    DeferredInitializers,
    safe_mode_scope,
    save_weights_only,
)
from keras_rnnattn._version import __version__
from keras_rnnattn.presets.catalog import (
    CONFIG_FILE,
    METADATA_FILE,
    WEIGHTS_FILE,
    _read_json,
    find_preset,
)
from keras_rnnattn.presets.error import PresetError
from keras_rnnattn.presets.files import check_preset_files
from keras_rnnattn.presets.files import file_facts as _file_facts

FORMAT_VERSION = 1
MAX_PRESET_MB = 20


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _write_json(file, data, what):
    try:
        text = json.dumps(data, indent=1, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"The {what} must be plain JSON data (str, numbers, bool, None, lists, "
            f"dicts): {error}. Received: {what}={str(data)[:200]}"
        ) from None
    with open(file, "w", encoding="utf-8") as f:
        f.write(text + "\n")


# --- Saving ----------------------------------------------------------------------
def save_model_weights(model, file):
    """Writes `model`'s weights to a `.weights.h5` file without its optimizer's state."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        save_weights_only(model, file, objects_to_skip=[optimizer])
        return
    model.save_weights(file)


WEIGHTS_DTYPES = (None, "float16")


def _cast_weights_file(file, dtype):
    """Rewrites the floating-point arrays of a weights file in `dtype`.

    The groups, the attributes and the other arrays are copied as they are;
    loading casts each array back to its variable's dtype (Keras assigns
    values with the variable's dtype).
    """
    import h5py
    import numpy as np

    def copy(source, target):
        for key, value in source.attrs.items():
            target.attrs[key] = value
        for name, item in source.items():
            if isinstance(item, h5py.Group):
                copy(item, target.create_group(name))
                continue
            data = item[()]
            if isinstance(data, np.ndarray) and data.dtype.kind == "f":
                with np.errstate(over="ignore"):  # checked on the next line
                    cast = data.astype(dtype)
                if not np.array_equal(np.isfinite(cast), np.isfinite(data)):
                    raise ValueError(
                        f"The weight {item.name} has values beyond {dtype}'s range "
                        f"(largest magnitude {np.nanmax(np.abs(data)):.4g}): save it "
                        "with weights_dtype=None."
                    )
                data = cast
            target.create_dataset(name, data=data)
            for key, value in item.attrs.items():
                target[name].attrs[key] = value

    partial = file + ".partial"
    try:
        with h5py.File(file, "r") as source, h5py.File(partial, "w") as target:
            copy(source, target)
    except ValueError:
        os.remove(partial)
        raise
    os.replace(partial, file)


def _check_loadable_class(cls):
    """Refuses a class that `load_preset` could not find again."""
    if cls.__module__ == "keras" or cls.__module__.startswith("keras."):
        return
    name = keras.saving.get_registered_name(cls)
    if keras.saving.get_registered_object(name) is not cls:
        raise ValueError(
            f"{cls.__name__} is not registered with Keras, so a preset of it could "
            "not be loaded: decorate the class with "
            '@keras.saving.register_keras_serializable(package="...").'
            f" Received: a {cls.__module__}.{cls.__name__}"
        )


def preset_tokenizers(model):
    """The `keras_rnnattn.text` tokenizers a model holds, by attribute name.

    Args:
        model: any object.

    Returns:
        dict `{attribute_name: tokenizer}` of its public attributes that are
        `keras_rnnattn.text.Tokenizer`s, e.g. `{"tokenizer": ...}` or
        `{"source_tokenizer": ..., "target_tokenizer": ...}`.

    Example:

    >>> preset_tokenizers(object())
    {}
    """
    from keras_rnnattn.text import Tokenizer

    found = {}
    for name, value in sorted(getattr(model, "__dict__", {}).items()):
        if not name.startswith("_") and isinstance(value, Tokenizer):
            found[name] = value
    return found


def save_preset(model, preset_dir, metadata=None, weights_dtype=None):
    """Writes a built model as a preset folder.

    Writes `model.weights.h5`, `config.json`, one `<attribute>.json` per
    tokenizer (from `model.preset_tokenizers()` when the model has it, else
    `preset_tokenizers(model)`; with `<attribute>.model` beside it for a
    `SentencePieceTokenizer`), then `metadata.json`: the given metadata plus
    `class_name`, `registered_name`, `parameter_count`, `keras_rnnattn_version`,
    `keras_version`, `backend`, `date` (UTC, ISO 8601), `format_version` and
    `files` (bytes and SHA-256 of each file). Existing files of the same names
    are replaced. Warns when the folder is over 20 MB, the limit of a preset
    shipped in `saved_models/`.

    Args:
        model: a built `keras.Model` whose class is a Keras class or is
            registered with `keras.saving.register_keras_serializable`.
        preset_dir: str or path-like, the folder (created if missing).
        metadata: optional dict of plain JSON data. The recommended keys of a
            shipped preset: `"description"`, `"data"`, `"data_license"`,
            `"command"` (that trained it), `"metrics"` (a dict of test
            metrics). NumPy numbers are written as numbers.
        weights_dtype: None (default) writes each weight in its variable's
            dtype; `"float16"` writes the floating-point weights as float16,
            half the size, for presets that would be over the limit (loading
            casts them back to the variables' dtype, so load, save and load
            again gives the same values). Recorded as `weights_dtype` in the
            metadata.

    Returns:
        The absolute path of the folder.

    Example:

    >>> import tempfile, keras
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> folder = save_preset(model, tempfile.mkdtemp(), {"description": "demo"})
    >>> sorted(os.listdir(folder))
    ['config.json', 'metadata.json', 'model.weights.h5']
    """
    if not isinstance(model, keras.Model):
        raise ValueError(
            "save_preset writes a keras.Model. "
            f"Received: model of type {type(model).__name__}"
        )
    if not model.built:
        raise ValueError(
            f"This {type(model).__name__} is not built, so it has no weights to "
            "save: call it on a batch of data (or `build` it) first."
        )
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(
            "`metadata` must be a dict of plain JSON data. "
            f"Received: metadata of type {type(metadata).__name__}"
        )
    if weights_dtype not in WEIGHTS_DTYPES:
        raise ValueError(
            f"`weights_dtype` must be one of {WEIGHTS_DTYPES}. "
            f"Received: weights_dtype={weights_dtype!r}"
        )
    _check_loadable_class(type(model))
    path = os.path.abspath(os.fspath(preset_dir))
    os.makedirs(path, exist_ok=True)

    config = keras.saving.serialize_keras_object(model)
    config.pop("compile_config", None)
    _write_json(os.path.join(path, CONFIG_FILE), config, "model config")
    save_model_weights(model, os.path.join(path, WEIGHTS_FILE))
    if weights_dtype is not None:
        _cast_weights_file(os.path.join(path, WEIGHTS_FILE), weights_dtype)
    if hasattr(model, "preset_tokenizers"):
        tokenizers = model.preset_tokenizers()
    else:
        tokenizers = preset_tokenizers(model)
    written = [CONFIG_FILE, WEIGHTS_FILE]
    for name, tokenizer in tokenizers.items():
        # `<name>.json`, and what the tokenizer writes beside it (the
        # `<name>.model` file of a SentencePieceTokenizer).
        saved = tokenizer.save(os.path.join(path, f"{name}.json"))
        written += [os.path.basename(file) for file in saved or [f"{name}.json"]]

    files = {name: _file_facts(os.path.join(path, name)) for name in written}
    automatic = {
        "class_name": type(model).__name__,
        "registered_name": keras.saving.get_registered_name(type(model)),
        "parameter_count": int(model.count_params()),
        "keras_rnnattn_version": __version__,
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),  # a fact recorded, not a branch
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "format_version": FORMAT_VERSION,
        "files": files,
    }
    if weights_dtype is not None:
        automatic["weights_dtype"] = weights_dtype
    merged = {"description": ""}
    if hasattr(model, "preset_metadata"):  # what the model keeps there itself
        merged.update(model.preset_metadata())
    merged.update(metadata or {})
    merged.update(automatic)
    _write_json(os.path.join(path, METADATA_FILE), merged, "metadata")

    total = sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))
    if total > MAX_PRESET_MB * 1024 * 1024:
        import warnings

        warnings.warn(
            f"The preset at {path} is {total / 2**20:.1f} MB, over the "
            f"{MAX_PRESET_MB} MB a preset shipped in saved_models/ may have.",
            stacklevel=2,
        )
    return path


# --- Loading ---------------------------------------------------------------------
def _short(error):
    """The first part of a Keras error message, without the full config it quotes."""
    text = str(error)
    for marker in ("Full object config:", "\n\nconfig=", "Full config:"):
        text = text.split(marker)[0]
    text = " ".join(text.split())
    return text if len(text) <= 600 else text[:600] + "..."


def _check_class(config, expected, file):
    if "class_name" not in config or not isinstance(config.get("config"), dict):
        raise PresetError(
            f"{file} is not a Keras model serialisation (it needs 'class_name' and "
            "a 'config' object). Write presets with `model.save_to_preset(folder)`."
        )
    name = config.get("registered_name") or config["class_name"]
    found = keras.saving.get_registered_object(name)
    if isinstance(found, type) and not issubclass(found, expected):
        raise PresetError(
            f"{file} holds a model of class {found.__name__}, which is not "
            f"{expected.__name__} or a subclass of it: load it with "
            f"{found.__name__}.from_preset or keras_rnnattn.presets.load_preset."
        )


def _without_compile_configs(config):
    """A copy of a Keras serialisation without `compile_config` entries."""
    if isinstance(config, dict):
        return {
            key: _without_compile_configs(value)
            for key, value in config.items()
            if key != "compile_config"
        }
    if isinstance(config, list):
        return [_without_compile_configs(item) for item in config]
    return config


def preset_class(name_or_dir):
    """The registered class of the model a preset holds, or None if unknown.

    Reads config.json only (no model is built).

    Args:
        name_or_dir: a preset name or a preset folder.

    Returns:
        The class registered under the config's name, or None.

    Example:

    >>> preset_class("movie_snippets_sentiment").__name__
    'AttentionClassifier'
    """
    config = _read_json(find_preset(name_or_dir), CONFIG_FILE)
    if not isinstance(config, dict):
        return None
    name = config.get("registered_name") or config.get("class_name")
    found = keras.saving.get_registered_object(name) if name else None
    return found if isinstance(found, type) else None


def load_preset(name_or_dir, cls=None, **config_overrides):
    """Builds a model from a preset and loads its weights.

    Args:
        name_or_dir: a preset name (see `list_presets()`), a preset folder, or
            a hub handle, `hf://<owner>/<name>` or
            `kaggle://<owner>/<model>/keras/<variation>` (see `find_preset`).
        cls: optional class the model must be an instance of (a subclass of it
            is accepted); by default any `keras.Model`.
        **config_overrides: values that replace entries of the model's config
            before it is built (for example `max_length`); they must keep the
            weights' shapes.

    Returns:
        The model, built, with the preset's weights, not compiled.

    Raises:
        PresetError: unknown name (the message lists the presets), missing or
            corrupt files (the message names the file), a class that is not
            `cls`, a class Keras does not know, or anything safe mode refuses
            (lambdas, classes outside Keras and the registered ones).

    Example:

    >>> import tempfile, keras, numpy as np
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> folder = save_preset(model, tempfile.mkdtemp())
    >>> loaded = load_preset(folder)
    >>> x = np.ones((1, 3), "float32")
    >>> bool(np.allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0)))
    True
    """
    expected = keras.Model if cls is None else cls
    path = find_preset(name_or_dir)
    config_file = os.path.join(path, CONFIG_FILE)
    config = _read_json(path, CONFIG_FILE)
    metadata_file = os.path.join(path, METADATA_FILE)
    metadata = _read_json(path, METADATA_FILE) if os.path.isfile(metadata_file) else {}
    _check_class(config, expected, config_file)
    check_preset_files(path, metadata)

    # No compile state, at any depth (an ensemble's members may hold theirs):
    # a preset restores weights, and an optimizer built here would create its
    # variables while initializers are deferred.
    config = _without_compile_configs(config)
    if config_overrides:
        config["config"] = {**config["config"], **config_overrides}
    # The weights file gives every variable its value: no initializer runs first.
    deferred = DeferredInitializers()
    try:
        # So that a global `enable_unsafe_deserialization()` does not switch it off.
        with safe_mode_scope(), deferred:
            model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    except (TypeError, ValueError) as error:
        raise PresetError(
            f"Could not build the model of {config_file}: {_short(error)} "
            "(Presets load in safe mode: no lambdas, and only Keras classes or "
            "classes registered with keras.saving.register_keras_serializable "
            "whose module is imported.)"
        ) from None
    if not isinstance(model, expected):
        raise PresetError(
            f"{config_file} holds a model of class {type(model).__name__}, which is "
            f"not {expected.__name__} or a subclass of it."
        )
    if not model.built:
        raise PresetError(
            f"The {type(model).__name__} of {config_file} is not built after "
            "deserialisation, so its weights cannot be loaded: the class must "
            "create its variables in __init__ (a functional model) or in "
            "build()/build_from_config() from the recorded build_config."
        )
    weights_file = os.path.join(path, WEIGHTS_FILE)
    try:
        model.load_weights(weights_file)
    except Exception as error:  # h5py, Keras and OS errors alike
        raise PresetError(
            f"Could not load the weights file {weights_file}: "
            f"{type(error).__name__}: {_short(error)}. The file is corrupt or "
            f"truncated, or was saved from another model configuration."
        ) from None
    deferred.initialize_unassigned()
    if hasattr(model, "read_preset_metadata"):  # the search defaults it records
        model.read_preset_metadata(metadata)
    return model
