"""Updating the metadata.json of a preset already written."""

import json
from pathlib import Path

from keras_rnnattn.presets.catalog import METADATA_FILE

# The keys of another run's metrics that `update_metadata(..., runs=...)` copies.
RUN_KEYS = ("parameters", "epochs_run")


def _read(folder):
    path = Path(folder) / METADATA_FILE
    if not path.is_file():
        raise ValueError(
            f"{path} does not exist: `folder` must be a preset folder that "
            "`save_to_preset` wrote. Received: folder={folder!r}"
        )
    return path, json.loads(path.read_text(encoding="utf-8"))


def update_metadata(folder, metrics=None, runs=None):
    """Adds metrics to the `metadata.json` of a preset folder.

    For numbers measured after the preset was written: a peer system scored
    on the same test set, or the scores of other runs of the same recipe (a
    baseline without attention) to show beside the preset's.

    Args:
        folder: str or path, a preset folder (`save_to_preset` wrote it).
        metrics: dict or None, merged into the metadata's `"metrics"`, one
            level deep: a dict value updates the dict already there under
            its key (`{"peers": {"crf": {...}}}` adds the peer `crf` beside
            any other), any other value replaces it.
        runs: dict or None, `{prefix: folder}` of other presets (a None
            folder is skipped): each one's test metrics (its metrics `test`
            and `test_*`) and its `parameters` and `epochs_run` are added as
            `<prefix>_<key>`.

    Returns:
        dict, the metadata written.

    Example:

    >>> import json, pathlib, tempfile
    >>> preset, baseline = (pathlib.Path(tempfile.mkdtemp()) for _ in range(2))
    >>> _ = (preset / "metadata.json").write_text('{"metrics": {"test_wer": 9.0}}')
    >>> _ = (baseline / "metadata.json").write_text(
    ...     '{"metrics": {"test_wer": 12.0, "train_seconds": 60}}')
    >>> metadata = update_metadata(preset, {"peers": {"g2p_en": {"wer": 20.0}}},
    ...                            runs={"no_attention": baseline})
    >>> json.loads((preset / "metadata.json").read_text())["metrics"]
    {'test_wer': 9.0, 'peers': {'g2p_en': {'wer': 20.0}}, 'no_attention_test_wer': 12.0}
    """
    path, metadata = _read(folder)
    merged = metadata.setdefault("metrics", {})
    for key, value in (metrics or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    for prefix, run in (runs or {}).items():
        if not run:
            continue
        for key, value in _read(run)[1].get("metrics", {}).items():
            if key == "test" or key.startswith("test_") or key in RUN_KEYS:
                merged[f"{prefix}_{key}"] = value
    text = json.dumps(metadata, indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return metadata
