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
source scripts/device_wheels.sh

if [ "${1:-}" = "--download" ]; then
  # Keras (as scripts/gpu_check.sh; the device has h5py, which reads the
  # shipped presets there) and misaki's wheel for its lexicons (read, not
  # imported): 6.2 MiB, within the 64 MiB copy beside the 56 MiB tracked tree.
  download_wheels "$WHEELS" --any misaki==0.9.4
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

use_wheels "$PY" "$WHEELS"
show_gpu

export KERAS_BACKEND=${BACKEND:-torch}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
# The recipe writes OUT/preset however its call ends; a call that overran is cut.
timeout --signal=INT $((${minutes%.*} * 60 + 150)) \
  "$PY" "applications/$recipe/train.py" --minutes "$minutes" --out "$out/preset" \
  "${options[@]}" 2>&1 | tee "$out/train.log"
