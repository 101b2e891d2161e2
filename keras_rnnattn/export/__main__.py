"""`python -m keras_rnnattn.export PRESET OUT --format F --options JSON`."""

import sys

from keras_rnnattn.export.exporter import main

sys.exit(main())
