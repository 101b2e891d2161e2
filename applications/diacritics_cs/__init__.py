"""The `diacritics_cs` recipe."""
