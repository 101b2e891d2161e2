"""The recipe of the `misaki_us_g2p` preset."""
