#!/usr/bin/env bash
# Secret-length changes on one build: builds build/hopper's benchmark and
# GPU suite, runs the suite as shipped, under each runtime setting given
# (NAME="ENV=VALUE ..."), and at each D = 64 tile height, then an
# interleaved A/B of the secret-length rows (scripts/env-sweep.sh, ROUNDS
# rounds, default 3) between "shipped" and the settings. Logs to $OUT.
#   scripts/lengths-ab.sh copy="DHP_SM90_V_BAND=0"
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-lengths-ab-out}"; mkdir -p "$out"
{ [ -f build/hopper/build.ninja ] || cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1; } &&
  cmake --build build/hopper -j 16 --target dhp_bench dhp_gpu_tests > "$out/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$out/build.log"; exit 1; }
echo "spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log")"
suite() { timeout 300 env "$@" build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee -a "$out/suite.log" |
  grep -E '^\[  (PASSED|FAILED)|FAILED  \]' | tr '\n' ' '; }
echo "GPU suite, shipped: $(suite X=1)"
for v in "$@"; do echo "GPU suite, ${v%%=*} [${v#*=}]: $(suite ${v#*=})"; done
for rows in 192 128 64; do echo "GPU suite, D64 $rows-row tiles: $(suite DHP_SM90_D64_ROWS=$rows)"; done
ROUNDS=${ROUNDS:-3} BENCH_ARGS="${BENCH_ARGS:---quick --only lengths}" OUT="$out/sweep" scripts/env-sweep.sh shipped="" "$@"
