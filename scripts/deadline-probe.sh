#!/usr/bin/env bash
# Timing-test variants of the deadline (threat model §8) in one GPU call:
# builds dhp_validate (and, with PYTHON_TESTS set, installs the Python package
# and runs the pytest selection it names), then one dudect run per argument.
#   OUT=dir scripts/deadline-probe.sh "LABEL=dhp_validate dudect args" ...
#   e.g. "graph=--test lengths --deadline auto --deadline-probe 1 --graph 1"
#        "early=--test lengths --deadline auto DHP_DEADLINE_PDL=1"  (NAME=VALUE: that run's environment)
# CONFIG: the configuration (default: the gate's small row); N: measurements
# (default 10^6). Each run is capped at RUN_S seconds (default 150).
set -uo pipefail
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-deadline-probe-out}"; mkdir -p "$out"
t0=$(date +%s)
cfg="${CONFIG:---dtype fp16 --batch 1 --heads 8 --seqlen 512 --head-dim 64 --causal --lengths separate}"
(cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 &&
  cmake --build build/hopper -j 16 --target dhp_validate > "$out/build.log" 2>&1) ||
  { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s" >> "$out/summary.txt"
if [ -n "${PYTHON_TESTS:-}" ]; then
  python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
    { echo "pip install failed"; tail -20 "$out/pip.log"; }
  (cd /tmp && timeout 120 python3 -m pytest "$repo/tests/python" -q -rs -p no:cacheprovider -k "$PYTHON_TESTS") \
    > "$out/pytest.log" 2>&1
  echo "pytest -k '$PYTHON_TESTS': $(tail -1 "$out/pytest.log") ($(( $(date +%s) - t0 )) s)" >> "$out/summary.txt"
fi
i=0
for run in "$@"; do
  # LABEL=ARGS split at the first "=-" (a label may hold '=', e.g. "L=S_max");
  # tokens of ARGS shaped NAME=VALUE (upper case) go to the environment of
  # that run alone, e.g. "early=--test lengths --deadline auto DHP_DEADLINE_PDL=1".
  i=$((i + 1)); label="${run%%=-*}"; args=""; envs=""
  for tok in ${run#"$label"=}; do
    if [[ "$tok" =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs="$envs $tok"; else args="$args $tok"; fi
  done
  # shellcheck disable=SC2086
  timeout "${RUN_S:-150}" env $envs build/hopper/tools/validate/dhp_validate dudect $cfg \
    --measurements "${N:-1000000}" --warmup 5000 --calib 20000 $args --out "$out/run$i.json" > "$out/run$i.txt" 2>&1
  rc=$?
  { echo "== $label${envs:+ ($envs )} (rc $rc, $(( $(date +%s) - t0 )) s)"; grep -E "^dudect|^deadline|^  (per budget|slack mod|budget mod)" "$out/run$i.txt"; } >> "$out/summary.txt"
done
logs=$(cd "$out" && ls | grep -v -e summary.txt -e logs.tar.gz)
# shellcheck disable=SC2086
tar czf "$out/logs.tar.gz" -C "$out" $logs && (cd "$out" && rm -f $logs)
cat "$out/summary.txt"
