"""The `punctuation_en` preset: punctuation and capitals for modern English."""
