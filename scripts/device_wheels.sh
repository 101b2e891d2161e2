# Sourced by scripts/gpu_check.sh and scripts/train_on_device.sh: the wheels a
# GPU machine without network installs Keras from.
#
#   download_wheels DIR [NAME...] [--any PIN...]  here: this environment's
#       Keras, namex and optree (and the NAMEs' versions) for the GPU machine's
#       CPython 3.12, and the pure-Python wheels named with --any, into DIR
#   use_wheels PY DIR               there: where PY cannot import keras, the
#       wheels of DIR installed into a temporary folder put on PYTHONPATH
#   show_gpu                        the GPU's name, driver and memory, or "none"

download_wheels() {
  local dir=$1 pins any=()
  shift
  local names=("keras" "namex" "optree")
  while [ $# -gt 0 ]; do
    case $1 in
      --any) any+=("$2"); shift 2 ;;
      *) names+=("$1"); shift ;;
    esac
  done
  pins=$(.venv/bin/python -c 'import sys
from importlib.metadata import version as v
print(" ".join(f"{n}=={v(n)}" for n in sys.argv[1:]))' "${names[@]}")
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dir" $pins
  if [ ${#any[@]} -gt 0 ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir" "${any[@]}"
  fi
  ls -l "$dir"
}

use_wheels() {
  local py=$1 dir=$2 site
  if ! "$py" -c "import keras" 2>/dev/null; then
    site=$(mktemp -d)
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$site" "$dir"/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

show_gpu() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    2>/dev/null || echo "nvidia-smi: none (CPU)"
}
