"""The `ding_de_en_bahdanau` recipe: train.py trains the preset, README.md is its model card."""
