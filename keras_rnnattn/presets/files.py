"""The files of a preset folder checked against the sizes and SHA-256 of metadata.json.

Imports no Keras: the checks run before anything is built.
"""

import hashlib
import os
import warnings

from keras_rnnattn.presets.catalog import METADATA_FILE, WEIGHTS_FILE
from keras_rnnattn.presets.error import PresetError

_LFS_POINTER = b"version https://git-lfs"


def file_facts(file):
    """`{"bytes": size, "sha256": hex digest}` of a file, as metadata.json records."""
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": os.path.getsize(file), "sha256": digest.hexdigest()}


# Preset folders already warned about, so that each warns once per process.
_WARNED_UNCHECKED = set()


def _warn_unchecked(path):
    """Warns once per folder that its weights load without a checksum."""
    folder = os.path.realpath(path)
    if folder in _WARNED_UNCHECKED:
        return
    _WARNED_UNCHECKED.add(folder)
    warnings.warn(
        f"The preset folder {path} records no SHA-256 of {WEIGHTS_FILE} (its "
        f"{METADATA_FILE} is missing or has no 'files' entry), so its weights "
        "are loaded unchecked: a truncated or replaced file is not detected. "
        "Write presets with `model.save_to_preset(folder)`, which records it.",
        stacklevel=5,
    )


def check_weights_file(path, metadata):
    """Checks the weights file: present, not an LFS pointer, as recorded."""
    file = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(file):
        raise PresetError(
            f"The preset folder {path} has no {WEIGHTS_FILE}. Write presets with "
            "`model.save_to_preset(folder)`."
        )
    with open(file, "rb") as f:
        head = f.read(len(_LFS_POINTER))
    if head == _LFS_POINTER:
        raise PresetError(
            f"{file} is a Git LFS pointer, not the weights: run `git lfs pull` in "
            "the repository."
        )
    expected = (metadata.get("files") or {}).get(WEIGHTS_FILE)
    if not isinstance(expected, dict) or "sha256" not in expected:
        _warn_unchecked(path)
    if not isinstance(expected, dict):
        return
    size = os.path.getsize(file)
    if "bytes" in expected and size != expected["bytes"]:
        raise PresetError(
            f"{file} has {size} bytes but {METADATA_FILE} records "
            f"{expected['bytes']}: the weights file is truncated or corrupt. Copy "
            "or download the preset again."
        )
    if "sha256" in expected and file_facts(file)["sha256"] != expected["sha256"]:
        raise PresetError(
            f"{file} does not match the SHA-256 recorded in {METADATA_FILE}: the "
            "weights file is corrupt or was replaced. Copy or download the preset "
            "again, or write it with `model.save_to_preset(folder)`."
        )


def _check_recorded_files(path, metadata):
    """Checks every other file `metadata["files"]` records (tokenizers, config)
    against its recorded size and SHA-256."""
    recorded = metadata.get("files")
    if not isinstance(recorded, dict):
        return
    for name, expected in recorded.items():
        if name == WEIGHTS_FILE or not isinstance(expected, dict):
            continue
        file = os.path.join(path, name)
        if not os.path.isfile(file):
            raise PresetError(
                f"The preset folder {path} has no {name}, which {METADATA_FILE} "
                "records. Copy or download the preset again."
            )
        facts = file_facts(file)
        if "bytes" in expected and facts["bytes"] != expected["bytes"]:
            difference = (
                f"has {facts['bytes']} bytes but {METADATA_FILE} records "
                f"{expected['bytes']}"
            )
        elif "sha256" in expected and facts["sha256"] != expected["sha256"]:
            difference = f"does not match the SHA-256 recorded in {METADATA_FILE}"
        else:
            continue
        raise PresetError(
            f"{file} {difference}: the file is truncated, corrupt or was "
            "replaced. Copy or download the preset again, or write it with "
            "`model.save_to_preset(folder)`."
        )


def check_preset_files(path, metadata):
    """Checks a preset folder's files before its model is built.

    The weights file must exist and not be a Git LFS pointer; it and every other
    file `metadata["files"]` records must have the recorded size and SHA-256.

    Args:
        path: str, the preset folder.
        metadata: dict, its metadata.json (empty when there is none).

    Raises:
        PresetError: naming the first file that is missing or differs.

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "model.weights.h5"), "wb") as f:
    ...     _ = f.write(b"weights")
    >>> with open(os.path.join(folder, "tokenizer.json"), "w") as f:
    ...     _ = f.write('{"vocabulary": []}')
    >>> files = {n: file_facts(os.path.join(folder, n)) for n in os.listdir(folder)}
    >>> check_preset_files(folder, {"files": files})
    >>> with open(os.path.join(folder, "tokenizer.json"), "w") as f:
    ...     _ = f.write('{"vocab')
    >>> check_preset_files(folder, {"files": files})
    Traceback (most recent call last):
    ...
    keras_rnnattn.presets.error.PresetError: ...tokenizer.json has 7 bytes but metadata.json records 18: ...
    """
    check_weights_file(path, metadata)
    _check_recorded_files(path, metadata)
