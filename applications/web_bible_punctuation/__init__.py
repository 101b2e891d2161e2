"""The `web_bible_punctuation` recipe: train.py trains the preset, README.md is its model card."""
