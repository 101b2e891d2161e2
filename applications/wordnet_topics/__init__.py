"""The `wordnet_topics` recipe: train.py trains the preset, README.md is its model card."""
