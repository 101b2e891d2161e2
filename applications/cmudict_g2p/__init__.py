"""The `cmudict_g2p` recipe: train.py trains the preset, README.md is its model card."""
