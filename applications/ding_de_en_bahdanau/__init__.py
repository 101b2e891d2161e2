"""The recipe of the `ding_de_en_bahdanau` preset."""
