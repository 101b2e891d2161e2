"""Where presets live and what their metadata.json says, read without Keras.

`keras_rnnattn.presets` loads and saves presets and needs Keras; this module
only finds preset folders and reads their JSON files, so that listing presets
and resolving a preset name (`keras-rnnattn presets`, the command line's
"unknown preset" errors) import neither Keras nor a backend.
"""

import json
import os

from keras_rnnattn.presets.error import PresetError
from keras_rnnattn.presets.hub import is_hub_handle, resolve_handle

PRESETS_ENV = "KERAS_RNNATTN_PRESETS"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"

# keras_rnnattn/, the folder above this one.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- Where presets live ---------------------------------------------------------
def _env_dirs():
    return [d for d in os.environ.get(PRESETS_ENV, "").split(os.pathsep) if d]


def _candidate_dirs():
    """Every folder presets are looked up in, in order, existing or not."""
    dirs = _env_dirs()
    root = os.path.dirname(_PACKAGE_DIR)
    if os.path.isfile(os.path.join(root, "pyproject.toml")):
        dirs.append(os.path.join(root, "saved_models"))
    dirs.append(os.path.join(_PACKAGE_DIR, "_saved_models"))
    unique = []
    for d in dirs:
        d = os.path.abspath(os.path.expanduser(d))
        if d not in unique:
            unique.append(d)
    return unique


def preset_dirs():
    """The folders that presets are looked up in, in order (existing ones only).

    Returns:
        list of absolute paths: the folders of `$KERAS_RNNATTN_PRESETS`, the
        checkout's `saved_models/`, the installed package's `_saved_models/`.

    Example:

    >>> isinstance(preset_dirs(), list)
    True
    """
    return [d for d in _candidate_dirs() if os.path.isdir(d)]


def _preset_folders():
    """`{name: path}` of every preset folder (one with config.json); first wins."""
    found = {}
    for directory in preset_dirs():
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if name not in found and os.path.isfile(os.path.join(path, CONFIG_FILE)):
                found[name] = path
    return found


def _looks_like_path(name):
    return (
        isinstance(name, os.PathLike)
        or os.sep in name
        or "/" in name
        or name.startswith((".", "~"))
    )


def find_preset(name_or_dir):
    """The folder of a preset given by name or by path.

    A bare name is looked up in `preset_dirs()` first, then taken as a folder
    relative to the working directory; a string with a slash (or starting with
    `.` or `~`) or a `pathlib.Path` is always a path. A handle
    `hf://<owner>/<name>` or `kaggle://<owner>/<model>/keras/<variation>` is
    downloaded, or found in the hub client's cache, by
    `keras_rnnattn.presets.hub.resolve_handle`.

    Args:
        name_or_dir: str or path-like, a preset name (`"ding_de_en_bahdanau"`),
            a preset folder, or a hub handle.

    Returns:
        The absolute path of the folder.

    Raises:
        PresetError: no such preset; the message lists the available presets
            and the folders searched. For a handle, see `resolve_handle`.

    Example:

    >>> try:
    ...     find_preset("no_such_preset")
    ... except ValueError as error:
    ...     print(type(error).__name__)
    PresetError
    """
    if not isinstance(name_or_dir, (str, os.PathLike)):
        raise PresetError(
            "A preset is a name or a folder path (str or path-like). "
            f"Received: name_or_dir={name_or_dir!r}"
        )
    name = os.fspath(name_or_dir)
    if is_hub_handle(name):
        return resolve_handle(name)
    if not _looks_like_path(name):
        folders = _preset_folders()
        if name in folders:
            return folders[name]
    path = os.path.abspath(os.path.expanduser(name))
    if os.path.isdir(path):
        return path
    if _looks_like_path(name):
        raise PresetError(
            f"No preset folder at {path}. Pass the folder that holds "
            f"{CONFIG_FILE} and {WEIGHTS_FILE}, or a preset name. "
            f"Received: name_or_dir={name!r}"
        )
    raise PresetError(_unknown_name_message(name))


def _unknown_name_message(name):
    presets = list_presets()
    if presets:
        listed = ", ".join(
            f"{n} ({s.get('class_name') or 'unknown class'})"
            for n, s in presets.items()
        )
        available = f"Available presets: {listed}."
    else:
        available = "No presets are installed."
    env_dirs = [os.path.abspath(os.path.expanduser(d)) for d in _env_dirs()]
    searched = ", ".join(
        d if os.path.isdir(d) else f"{d} (missing)"
        for d in _candidate_dirs()
        if os.path.isdir(d) or d in env_dirs
    )
    return (
        f"Unknown preset {name!r}. {available} Looked in: {searched or 'nothing'} (add folders "
        f"with the environment variable {PRESETS_ENV}). Or pass the path of a "
        "preset folder."
    )


def list_presets():
    """The available presets and what they are, read from their metadata.json.

    Only metadata.json files are read: no model is built.

    Returns:
        dict `{name: summary}`, names sorted within each folder of
        `preset_dirs()`; each summary is a dict with `"description"`,
        `"class_name"`, `"registered_name"` (the Keras registration,
        `"package>Class"`), `"parameter_count"`, `"metrics"` (a dict) and
        `"path"`.
        A preset whose metadata.json is missing or unreadable has empty fields
        and an `"error"` saying why.

    Example:

    >>> summaries = list_presets()
    >>> all("class_name" in s for s in summaries.values())
    True
    """
    out = {}
    for name, path in _preset_folders().items():
        summary = {
            "description": "",
            "class_name": None,
            "registered_name": None,
            "parameter_count": None,
            "metrics": {},
            "path": path,
        }
        try:
            metadata = _read_json(path, METADATA_FILE)
        except PresetError as error:
            summary["error"] = str(error)
        else:
            for key in (
                "description",
                "class_name",
                "registered_name",
                "parameter_count",
            ):
                if key in metadata:
                    summary[key] = metadata[key]
            if isinstance(metadata.get("metrics"), dict):
                summary["metrics"] = metadata["metrics"]
        out[name] = summary
    return out


def preset_metadata(name_or_dir):
    """The metadata of a preset: its metadata.json as a dict.

    Reads one JSON file and builds no model.

    Args:
        name_or_dir: str or path-like, a preset name or folder, as in
            `find_preset`.

    Returns:
        The dict of metadata.json; `{}` for a preset folder without one.

    Raises:
        PresetError: no such preset, or a metadata.json that is not a JSON
            object.

    Example:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> preset_metadata(folder)
    {}
    """
    path = find_preset(name_or_dir)
    if not os.path.isfile(os.path.join(path, METADATA_FILE)):
        return {}
    return _read_json(path, METADATA_FILE)


def preset_beam_penalties(name_or_dir):
    """The beam's penalties a translator preset's recipe validated.

    Read by `keras_rnnattn.decoding.SearchSettings.from_metadata` from
    metadata.json's `search` entry: `length_penalty` (α of GNMT's length
    penalty, the one that scored best on the validation split) and
    `coverage_penalty` (β of the coverage penalty).
    A loaded preset's model takes them as its defaults (`translate`, the CLI
    and export use them).

    Args:
        name_or_dir: str or path-like, a preset name or folder.

    Returns:
        dict `{"length_penalty": α, "coverage_penalty": β}` of floats; 0.0 for
        a value the metadata does not record.

    Example:

    >>> import tempfile
    >>> preset_beam_penalties(tempfile.mkdtemp())
    {'length_penalty': 0.0, 'coverage_penalty': 0.0}
    """
    from keras_rnnattn.decoding.search_settings import SearchSettings

    settings = SearchSettings.from_metadata(preset_metadata(name_or_dir))
    return {
        "length_penalty": settings.length_penalty,
        "coverage_penalty": settings.coverage_penalty,
    }


def preset_length_penalty(name_or_dir):
    """The beam's length penalty α a translator preset's recipe validated.

    Recipes record it as `search.length_penalty` in metadata.json (the α of
    GNMT's length penalty that scored best on the validation split); see
    `preset_beam_penalties`.

    Args:
        name_or_dir: str or path-like, a preset name or folder.

    Returns:
        float, the recorded α; 0.0 when the metadata records none.

    Example:

    >>> import tempfile
    >>> preset_length_penalty(tempfile.mkdtemp())
    0.0
    """
    return preset_beam_penalties(name_or_dir)["length_penalty"]


# --- Files -----------------------------------------------------------------------
def _read_json(path, filename):
    file = os.path.join(path, filename)
    if not os.path.isfile(file):
        raise PresetError(
            f"The preset folder {path} has no {filename}: it is not a complete "
            "preset. Write presets with `model.save_to_preset(folder)`."
        )
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, UnicodeDecodeError) as error:
        raise PresetError(
            f"{file} is not valid JSON ({error}): the file is corrupt; write the "
            "preset again with `model.save_to_preset(folder)`."
        ) from None
    if not isinstance(data, dict):
        raise PresetError(
            f"{file} must hold a JSON object. Received: {type(data).__name__}"
        )
    return data


def _folder_bytes(path):
    """The total size of the files under a folder, in bytes."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:  # removed while listing, or a broken link
                pass
    return total


def preset_details():
    """Everything about every available preset: its metadata.json, path and size.

    Only JSON files are read: neither Keras nor a backend is imported.

    Returns:
        dict `{name: details}` in the order of `list_presets()`; each details
        dict has `"path"`, `"bytes"` (the folder's total size) and
        `"metadata"` (the whole metadata.json, `{}` when missing or unreadable),
        plus `"error"` saying why when metadata.json is missing or unreadable.

    Example:

    >>> details = preset_details()
    >>> all({"path", "bytes", "metadata"} <= set(d) for d in details.values())
    True
    """
    out = {}
    for name, path in _preset_folders().items():
        details = {"path": path, "bytes": _folder_bytes(path), "metadata": {}}
        try:
            details["metadata"] = _read_json(path, METADATA_FILE)
        except PresetError as error:
            details["error"] = str(error)
        out[name] = details
    return out


# The kinds of test metric, most telling first, for `headline_metric`.
_HEADLINE_KINDS = (
    "bleu",
    "chrf",
    "accuracy",
    "f1",
    "wer",
    "perplexity",
    "bits_per_char",
)


def headline_metric(metrics):
    """The one metric that sums up a preset: its main test-set number.

    Among the numbers of `metrics` whose key names a known kind (BLEU, chrF,
    accuracy, F1, word error rate, perplexity, bits per character; in this order of
    preference), test-set ones (the key has a `test` part) come first, then
    beam-search ones, then the shortest key (`test_accuracy` before
    `test_accuracy_first_200`).

    Args:
        metrics: dict, the `metrics` entry of a preset's metadata.json.

    Returns:
        `(key, value)`, or None when no entry is such a number.

    Example:

    >>> headline_metric({"test_greedy_bleu": 8.0, "test_beam4_bleu": 9.7,
    ...                  "epochs_run": 18})
    ('test_beam4_bleu', 9.7)
    """
    if not isinstance(metrics, dict):
        return None
    ranked = []
    for key, value in metrics.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        parts = str(key).lower().split("_")
        kinds = [i for i, kind in enumerate(_HEADLINE_KINDS) if kind in "_".join(parts)]
        if not kinds:
            continue
        beam = any(part.startswith("beam") for part in parts)
        ranked.append(((min(kinds), "test" not in parts, not beam, len(key)), key))
    if not ranked:
        return None
    key = min(ranked)[1]
    return key, metrics[key]
