"""Presets: folders of plain files that save and load a model, and where they live.

A preset is a folder `saved_models/<name>/` holding

- `config.json`: the model's Keras serialisation
  (`keras.saving.serialize_keras_object(model)`, without its compile config);
- `model.weights.h5`: the weights (`model.save_weights`, no optimizer state);
- `<attribute>.json`: each `keras_rnnattn.text` tokenizer of the model, for
  reading and for other tools (the model reads its tokenizers from config.json),
  with `<attribute>.model` beside it for a `SentencePieceTokenizer` (its
  SentencePiece model, for SentencePiece's runtimes and keras-hub);
- `metadata.json`: what the preset is (description, data and licence, the
  command that trained it, test metrics) and facts written automatically
  (class, parameter count, versions, backend, date, size and SHA-256 of each
  file).

Loading runs no code from the preset: config.json is read with Keras's
`safe_mode` (no lambdas, only Keras classes and classes registered with
`keras.saving.register_keras_serializable`), its top-level class is checked
before anything is built, and every file metadata.json records (the weights,
config.json, the tokenizers' JSON) is checked against its size and SHA-256. The model is built by Keras from the `build_config` that
config.json records (the same path as a `.keras` file), so any model that
round-trips through `keras.saving.serialize_keras_object` /
`deserialize_keras_object` built can be a preset. Classes are found by their
registered names: the package registers its layers and models as soon as Keras
and it are both imported (`keras_rnnattn/__init__.py`), so this module imports
no model.

A handle `hf://<owner>/<name>` or `kaggle://<owner>/<model>/keras/<variation>`
is downloaded, or read from the hub client's cache, by
`keras_rnnattn.presets.hub` (with `huggingface_hub` or `kagglehub`), then
loaded from that folder as any other, checksums and safe mode included.

Presets are looked up by name, in order, in

1. the folders of the environment variable `KERAS_RNNATTN_PRESETS`
   (separated by `os.pathsep`);
2. `saved_models/` of the source checkout this package is imported from (a
   folder with `pyproject.toml` beside the package: a checkout or an editable
   install);
3. `keras_rnnattn/_saved_models/` inside the installed package, where
   `pip install .` puts the repository's `saved_models/`.

Finding presets and reading their metadata (`find_preset`, `list_presets`,
`preset_metadata`, `preset_beam_penalties`, `preset_length_penalty`,
`preset_dirs`) is done by `keras_rnnattn.presets.catalog`, which imports no
Keras; they are importable from here too.
"""

from keras_rnnattn.presets.catalog import (
    CONFIG_FILE,
    METADATA_FILE,
    PRESETS_ENV,
    WEIGHTS_FILE,
    find_preset,
    list_presets,
    preset_beam_penalties,
    preset_dirs,
    preset_length_penalty,
    preset_metadata,
)
from keras_rnnattn.presets.error import PresetError

# Saving and loading need Keras: they load from `saving` on first use, so that
# finding presets and reading their metadata (the CLI's `presets`) does not.
_SAVING = (
    "FORMAT_VERSION",
    "MAX_PRESET_MB",
    "WEIGHTS_DTYPES",
    "load_preset",
    "preset_class",
    "preset_tokenizers",
    "save_model_weights",
    "save_preset",
)

__all__ = [
    "CONFIG_FILE",
    "METADATA_FILE",
    "PRESETS_ENV",
    "PresetError",
    "WEIGHTS_FILE",
    "find_preset",
    "list_presets",
    "preset_beam_penalties",
    "preset_dirs",
    "preset_length_penalty",
    "preset_metadata",
    *(name for name in _SAVING if not name.isupper()),
]


def __getattr__(name):
    if name in _SAVING:
        from keras_rnnattn.presets import saving

        return getattr(saving, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
