#!/usr/bin/env bash
# Runs ruff, then the whole test suite once per Keras backend, each in its own process,
# then prints one summary line per part. Exits non-zero if any part failed.
#
# The backends run side by side, JOBS at a time (default: all of them). A test process
# spends most of its time in Python on one core, so on 2 cores three processes finish
# in about half the time of one after another. JOBS=1 runs them one after another.
# Each backend's output, with its 25 slowest tests, is printed whole once it has finished.
set -u
PY=${PY:-.venv/bin/python}
BACKENDS=${BACKENDS:-"tensorflow jax torch"}
JOBS=${JOBS:-0}
RUFF=$(dirname "$PY")/ruff
logdir=$(mktemp -d)
status=0
summary=()

if "$RUFF" check . && "$RUFF" format --check . >/dev/null; then
  summary+=("ruff: ok")
else
  "$RUFF" format --check . || true
  summary+=("ruff: FAILED")
  status=1
fi

# Each backend's suite runs as two pytest processes, one after the other: the
# test folders below, then the rest. A JAX process that compiled the whole
# suite's thousands of XLA programs crashed now and then inside XLA's compiler
# late in the run (a segfault or an abort in `backend_compile_and_load`, in a
# test that passes alone); half the programs per process keeps it short of that.
# Arguments naming test paths run as one process.
FIRST_HALF="tests/applications tests/callbacks tests/datasets tests/decoding
  tests/distribution tests/integrations tests/layers tests/models tests/reliability"

halves() {
  local arg
  for arg in "$@"; do
    case $arg in tests*) echo "all"; return ;; esac
  done
  echo "first second"
}

run_backend() {
  local backend=$1 start rc=0 part paths status_of_part
  start=$(date +%s)
  : >"$logdir/$backend.log"
  for part in $(halves "${@:2}"); do
    case $part in
      all) paths=() ;;
      first) read -ra paths <<<"$(echo $FIRST_HALF)" ;;
      second) paths=()
        for path in $FIRST_HALF; do paths+=("--ignore=$path"); done
        paths+=(tests) ;;
    esac
    KERAS_BACKEND=$backend "$PY" -m pytest -q -p no:cacheprovider --durations=25 \
      "${paths[@]}" "${@:2}" >>"$logdir/$backend.log" 2>&1
    status_of_part=$?
    # 5: this half had no test the arguments select.
    if [ "$status_of_part" -ne 0 ] && [ "$status_of_part" -ne 5 ]; then
      rc=$status_of_part
    fi
  done
  echo "$rc $(($(date +%s) - start))" >"$logdir/$backend.done"
}

# JAX keeps the XLA programs that took 0.1 s or more to compile in a cache on
# disk for this run (both halves), and loads them where a test compiles the
# same program again: the suite's small models of the same configurations,
# eager scans (recompiled at each call), the decoding functions. The many
# tiny programs (one eager op each) are not written. The first half of JAX's
# suite took 822 s instead of 1,058 s on one core.
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-$logdir/jax_cache}
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=${JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-0.1}

started=$(date +%s)
for backend in $BACKENDS; do
  if [ "$JOBS" -gt 0 ]; then
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  fi
  echo "=== KERAS_BACKEND=$backend started"
  run_backend "$backend" "$@" &
done
wait
rm -rf "$logdir/jax_cache"

for backend in $BACKENDS; do
  echo "=== KERAS_BACKEND=$backend"
  cat "$logdir/$backend.log"
  read -r rc secs <"$logdir/$backend.done" || { rc=1; secs=0; }
  line=$(grep -E '^=*.*(passed|failed|error|no tests ran).* in [0-9.]+s' "$logdir/$backend.log" | tr -d '=' | paste -sd ';' -)
  if [ "$rc" -ne 0 ]; then status=1; fi
  summary+=("$backend: ${line:-no summary} (exit $rc, ${secs}s wall)")
done

echo
echo "=== summary ($(($(date +%s) - started))s wall for the tests)"
for s in "${summary[@]}"; do echo "$s"; done
exit $status
