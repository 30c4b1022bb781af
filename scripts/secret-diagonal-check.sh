#!/usr/bin/env bash
# Causal calls with separate lengths planned as non-causal (perf-log,
# session 29): one GPU run. Builds build/hopper (library, GPU suite, sm90
# tests, dhp_bench); runs the sm90 tests, the GPU suite as shipped, with the
# old causal plan (DHP_SM90_SECRET_DIAGONAL=causal), with D64 forced to
# 128-row tiles and with V's copy forced beside on a 16-CTA grid; the
# retry-block check on the library's SASS; then a runtime A/B of causal
# separate-length rows (new plan, new plan with the copy before, old plan;
# ROUNDS rotated rounds) with one non-causal row whose path the knob does
# not touch (the noise between settings); SWEEP=0 skips the A/B. Logs to $OUT.
set -uo pipefail
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-secret-diagonal-out}"; mkdir -p "$out"
cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 &&
  cmake --build build/hopper -j 16 --target dhp_attention dhp_gpu_tests dhp_sm90_tests dhp_bench > "$out/build.log" 2>&1 ||
  { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
echo "spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log"); wgmma serialised (C751x) $(grep -c 'C751[0-9]' "$out/build.log")"
brief() { grep -E '^\[  (PASSED|FAILED)|^\[  FAILED  \]' | head -12 | tr '\n' ' '; }
echo "sm90 tests: $(build/hopper/tests/dhp_sm90_tests --gtest_brief=1 2>&1 | tee "$out/sm90.log" | brief)"
echo "GPU suite: $(build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite.log" | brief)"
echo "GPU suite, causal plan for a secret diagonal: $(DHP_SM90_SECRET_DIAGONAL=causal build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-old-plan.log" | brief)"
echo "GPU suite, D64 128-row tiles: $(DHP_SM90_D64_ROWS=128 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-d64r128.log" | brief)"
echo "GPU suite, copy beside on 16 CTAs: $(DHP_SM90_V_COPY=beside DHP_SM90_GRID=16 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-beside16.log" | brief)"
echo "$(python3 tools/validate/per_pc.py build/hopper/src/libdhp_attention.so 2>&1 | tail -2)"
[ "${SWEEP:-1}" = 0 ] && exit 0  # SWEEP=0: build, tests and suites only
cases="--case 4,16,4096,128,1,0,1 --case 4,8,4096,256,1,0,1 --case 4,32,4096,64,1,0,1 --case 16,32,1024,64,1,0,1 --case 4,16,4096,128,0,0,1"
ROUNDS="${ROUNDS:-5}" BENCH_ARGS="${BENCH_ARGS:-$cases}" OUT="$out/sweep" \
  scripts/env-sweep.sh new="" new_copy_before="DHP_SM90_V_COPY=before" old="DHP_SM90_SECRET_DIAGONAL=causal" 2>&1 | tail -12
