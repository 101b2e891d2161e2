"""The fixtures of a shipped preset's test file: its metadata and its model."""

import json

import pytest


def preset_fixtures(folder, cls):
    """`(metadata, model)`: module-scoped fixtures of the preset in `folder`.

    `metadata` is its metadata.json (the tests skip, naming the folder, where
    the preset is not shipped); `model` is `cls.from_preset(folder)`.

    Args:
        folder: `pathlib.Path` of the preset folder.
        cls: the model class, such as `Translator`.
    """

    @pytest.fixture(scope="module")
    def metadata():
        if not (folder / "config.json").is_file():
            pytest.skip(f"{folder.name} is not shipped in {folder.parent}")
        return json.loads((folder / "metadata.json").read_text(encoding="utf-8"))

    @pytest.fixture(scope="module")
    def model(metadata):
        return cls.from_preset(str(folder))

    return metadata, model
