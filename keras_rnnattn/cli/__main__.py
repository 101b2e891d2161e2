"""`python -m keras_rnnattn.cli`: the `keras-rnnattn` command."""

import sys

from keras_rnnattn.cli import main

sys.exit(main())
