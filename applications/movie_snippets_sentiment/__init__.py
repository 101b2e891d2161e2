"""The `movie_snippets_sentiment` recipe: train.py trains the preset, README.md is its model card."""
