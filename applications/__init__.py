"""The recipes of the presets in saved_models/: one package per application.

Each `applications/<name>/train.py` runs as a script from the repository root
(`python applications/<name>/train.py`) and imports as
`applications.<name>.train`.
"""
