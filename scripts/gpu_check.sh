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

if [ "${1:-}" = "--download" ]; then
  # The versions of this environment's Keras, for the GPU machine's CPython 3.12.
  pins=$(.venv/bin/python -c 'from importlib.metadata import version as v
print(" ".join(f"{n}=={v(n)}" for n in ("keras", "namex", "optree")))')
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$WHEELS" $pins
  ls -l "$WHEELS"
  exit 0
fi

out=${1:-.}
shift || true
mkdir -p "$out"
if ! "$PY" -c "import keras" 2>/dev/null; then
  site=$(mktemp -d)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$site" "$WHEELS"/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>/dev/null || echo "nvidia-smi: none (CPU fallback)"
exec "$PY" scripts/gpu_check.py --backends ${BACKENDS:-jax torch} \
  --out "$out/gpu_check.md" "$@"
