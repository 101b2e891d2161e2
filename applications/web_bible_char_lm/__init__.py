"""The recipe of the `web_bible_char_lm` preset."""
