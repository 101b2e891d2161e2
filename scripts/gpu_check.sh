#!/usr/bin/env bash
# The GPU check as one command (scripts/gpu_check.py: numerics against CPU reference
# values, decoding, bfloat16, speed beside plain PyTorch), on JAX and PyTorch.
#
# The GPU machine has Python with PyTorch and JAX for CUDA but no Keras and no
# network: where `import keras` fails, Keras is installed from the wheels in .whl/
# (WHEELS=...), which this script fetches beforehand on a machine with pip access:
#
#   bash scripts/gpu_check.sh --download   # here: Keras and its two missing needs
#   bash scripts/gpu_check.sh OUT_DIR      # there: writes OUT_DIR/gpu_check.md, .json
#
# PY picks the Python (default python3), BACKENDS the Keras backends (default
# "jax torch"); arguments after OUT_DIR go to gpu_check.py (--quick, --timeout N).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.whl}
PY=${PY:-python3}
source scripts/device_wheels.sh

if [ "${1:-}" = "--download" ]; then
  download_wheels "$WHEELS"  # this environment's Keras, for CPython 3.12
  exit 0
fi

out=${1:-.}
shift || true
mkdir -p "$out"
use_wheels "$PY" "$WHEELS"
show_gpu
exec "$PY" scripts/gpu_check.py --backends ${BACKENDS:-jax torch} \
  --out "$out/gpu_check.md" "$@"
