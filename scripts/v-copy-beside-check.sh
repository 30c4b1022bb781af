#!/usr/bin/env bash
# V's copy beside the attention (perf-log, session 28): one GPU run. Builds
# build/hopper (library, GPU suite, sm90 tests, dhp_bench); runs the sm90
# tests, the GPU suite as shipped, with the copy forced beside on a 16-CTA
# grid (every producer waits on the copy's counters; some attention CTAs
# wait for SMs the copy holds) and forced before; the retry-block check on
# the library's SASS; then a runtime A/B of the secret-length rows (copy
# before against beside, ROUNDS rotated rounds). Logs to $OUT.
set -uo pipefail
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-v-copy-out}"; mkdir -p "$out"
cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 &&
  cmake --build build/hopper -j 16 --target dhp_attention dhp_gpu_tests dhp_sm90_tests dhp_bench > "$out/build.log" 2>&1 ||
  { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
echo "spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log"); wgmma serialised (C751x) $(grep -c 'C751[0-9]' "$out/build.log")"
brief() { grep -E '^\[  (PASSED|FAILED)|^\[  FAILED  \]' | head -12 | tr '\n' ' '; }
echo "sm90 tests: $(build/hopper/tests/dhp_sm90_tests --gtest_brief=1 2>&1 | tee "$out/sm90.log" | brief)"
echo "GPU suite: $(build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite.log" | brief)"
echo "GPU suite, copy beside on 16 CTAs: $(DHP_SM90_V_COPY=beside DHP_SM90_GRID=16 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-beside16.log" | brief)"
echo "GPU suite, copy before: $(DHP_SM90_V_COPY=before build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-before.log" | brief)"
echo "$(python3 tools/validate/per_pc.py build/hopper/src/libdhp_attention.so 2>&1 | tail -3)"
ROUNDS="${ROUNDS:-7}" BENCH_ARGS="${BENCH_ARGS:---quick --only lengths}" OUT="$out/sweep" \
  scripts/env-sweep.sh before="DHP_SM90_V_COPY=before" beside="" first16="DHP_SM90_V_COPY_FIRST=16" 2>&1 | tail -12
