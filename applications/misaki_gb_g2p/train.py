"""Trains the `misaki_gb_g2p` preset: English spelling → misaki's British phonemes.

The `misaki_us_g2p` recipe (`applications/misaki_us_g2p/train.py`, whose
options it takes) over misaki 0.9.4's British lexicons, `gb_gold.json` and
`gb_silver.json`, split by the same rule (`load_misaki_lexicon(split,
dialect="gb")`: a gold word whose `sha1(word) % 20` is 0 is test, 1
validation). Its outputs are checked against misaki's GB symbol set. Started
from the American preset (`--init-from misaki_us_g2p`), the British symbols
get new ids after the American ones and the network keeps everything else.

    python applications/misaki_gb_g2p/train.py --init-from misaki_us_g2p
    python applications/misaki_gb_g2p/train.py --quick            # smoke run
"""

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script (`python applications/<name>/train.py`): the repository
    # root on the path, so that the recipe imports as the package `applications`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from applications.misaki_us_g2p import train as recipe  # noqa: E402

NAME = recipe.DIALECT_NAMES["gb"]


def main(argv=None):
    return recipe.main(argv, dialect="gb")


if __name__ == "__main__":
    sys.exit(main())
