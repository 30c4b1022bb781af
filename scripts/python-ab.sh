#!/usr/bin/env bash
# Compile-time A/B through the Python package (GPU machine): installs the
# package once per variant (NAME="extra CUDA flags"; pip --target
# build/pyab-NAME, no network: --no-build-isolation --no-deps), then runs
# each Python command on every variant, ROUNDS times round-robin (the order
# rotated per round), with PYTHONPATH pointing at that variant. For figures
# only the Python path gives (e.g. scripts/small-call-methods.py: fresh inputs).
#   CMDS="scripts/small-call-methods.py;scripts/small-call-methods.py --hot" \
#     ROUNDS=3 scripts/python-ab.sh base="-DX=0" new=""
# Logs to $OUT (or ./python-ab-out); prints each run's last lines.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-python-ab-out}"; mkdir -p "$out"
names=()
for v in "$@"; do
  name="${v%%=*}"; flags="${v#*=}"
  rm -rf "build/pyab-$name"
  python3 -m pip install --no-build-isolation --no-deps -q --target "build/pyab-$name" \
    -C cmake.define.DHP_CUDA_ARCHS=90a "-C" "cmake.define.CMAKE_CUDA_FLAGS=$flags" \
    -C "build-dir=build/pyab-build-$name" . > "$out/pip-$name.log" 2>&1 ||
    { echo "$name: install failed"; tail -5 "$out/pip-$name.log"; continue; }
  echo "$name [$flags]: spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/pip-$name.log")"
  names+=("$name")
done
IFS=';' read -r -a cmds <<< "${CMDS:-scripts/small-call-methods.py}"
for r in $(seq 1 "${ROUNDS:-1}"); do
  for k in $(seq 0 $((${#names[@]} - 1))); do
    name="${names[$(((r - 1 + k) % ${#names[@]}))]}"
    for cmd in "${cmds[@]}"; do
      echo "== round $r, $name: $cmd"
      PYTHONPATH="$PWD/build/pyab-$name" timeout 300 python3 $cmd 2>&1 | tee -a "$out/run-$name.log" | tail -3
    done
  done
done
