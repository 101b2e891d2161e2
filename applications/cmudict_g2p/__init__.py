"""The recipe of the `cmudict_g2p` preset."""
