#!/usr/bin/env bash
# Trains a recipe on a GPU machine that holds a copy of the working tree (no
# network there, at most 10 minutes a call), and writes what it made under OUT:
# OUT/preset (the weights, config, tokenizers and metadata.json with the run's
# training history), OUT/run (the run's checkpoints, to carry back and resume)
# and OUT/train.log.
#
#   bash scripts/train_on_device.sh --download          # here: the wheels in .whl/
#   bash scripts/train_on_device.sh RECIPE OUT [--minutes N] [recipe options]
#
# There, where `import keras` fails, Keras and the recipes' data packages are
# installed from .whl/ (carry it: `carry: [".whl"]`). The recipe trains for N
# minutes of this call (default 7: its evaluation and the preset's writing fit
# in the call's 10), from the shipped weights with `--init-from PRESET`, or
# going on with a run folder carried along with `--resume runs/<folder>` (copied
# to OUT/run, where it goes on).
# BACKEND picks the Keras backend (default torch), PY the Python (python3).
# `--quick` among the recipe options makes it a smoke run (tested on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.whl}
PY=${PY:-python3}

if [ "${1:-}" = "--download" ]; then
  # Keras and its two needs the device lacks (as scripts/gpu_check.sh), h5py for
  # the weights files, and misaki's wheel for its lexicons (read, not imported).
  pins=$(.venv/bin/python -c 'from importlib.metadata import version as v
print(" ".join(f"{n}=={v(n)}" for n in ("keras", "namex", "optree", "h5py")))')
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$WHEELS" $pins
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS" misaki==0.9.4
  ls -l "$WHEELS"
  exit 0
fi

if [ $# -lt 2 ]; then
  echo "usage: bash scripts/train_on_device.sh RECIPE OUT [--minutes N] [recipe options]" >&2
  echo "       bash scripts/train_on_device.sh --download" >&2
  exit 2
fi
recipe=$1
out=$2
shift 2
if [ ! -f "applications/$recipe/train.py" ]; then
  echo "no recipe applications/$recipe/train.py: one of $(ls applications | grep -v '\.' | tr '\n' ' ')" >&2
  exit 2
fi
minutes=7
resume=
options=()
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --minutes=*) minutes=${1#--minutes=}; shift ;;
    --resume) resume=$2; shift 2 ;;
    --resume=*) resume=${1#--resume=}; shift ;;
    *) options+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "$resume" ]; then
  # The carried run goes on in OUT/run, which comes back with OUT.
  rm -rf "$out/run"
  cp -r "$resume" "$out/run"
  options=(--resume "$out/run" "${options[@]}")
else
  options=(--run-dir "$out/run" "${options[@]}")
fi

if ! "$PY" -c "import keras" 2>/dev/null; then
  site=$(mktemp -d)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$site" "$WHEELS"/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>/dev/null || echo "nvidia-smi: none (CPU)"

export KERAS_BACKEND=${BACKEND:-torch}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
# The recipe writes OUT/preset however its call ends; a call that overran is cut.
timeout --signal=INT $((${minutes%.*} * 60 + 150)) \
  "$PY" "applications/$recipe/train.py" --minutes "$minutes" --out "$out/preset" \
  "${options[@]}" 2>&1 | tee "$out/train.log"
