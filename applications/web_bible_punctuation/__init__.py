"""The recipe of the `web_bible_punctuation` preset."""
