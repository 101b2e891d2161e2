"""The `web_bible_char_lm` recipe: train.py trains the preset, README.md is its model card."""
