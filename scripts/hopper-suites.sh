#!/usr/bin/env bash
# One GPU run's common part for a launcher or kernel change: builds
# build/hopper (library, GPU suite, sm90 tests, dhp_bench), prints spills and
# serialised wgmmas, runs the sm90 tests, CallState.* alone, the GPU suite as shipped and once
# per extra setting, then the retry-block check on the library's SASS.
# Settings as LABEL=ENV... (label up to the first '='):
#   scripts/hopper-suites.sh "copy before=DHP_SM90_V_COPY=before"
# CUDA_FLAGS: extra nvcc flags for the build (e.g. -DDHP_SM90_PACKED_ROWS=0: no S_q > 1 packing).
# Logs to $OUT; exits 1 if the build fails.
set -uo pipefail
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-hopper-suites-out}"; mkdir -p "$out"
cmake --preset hopper -DDHP_BUILD_PYTHON=OFF "-DCMAKE_CUDA_FLAGS=${CUDA_FLAGS:-}" > "$out/configure.log" 2>&1 &&
  cmake --build build/hopper -j 16 --target dhp_attention dhp_gpu_tests dhp_sm90_tests dhp_bench > "$out/build.log" 2>&1 ||
  { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
echo "spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log"); wgmma serialised (C751x) $(grep -c 'C751[0-9]' "$out/build.log")"
brief() { grep -E '^\[  (PASSED|FAILED)|^\[  FAILED  \]' | head -12 | tr '\n' ' '; }
echo "sm90 tests: $(build/hopper/tests/dhp_sm90_tests --gtest_brief=1 2>&1 | tee "$out/sm90.log" | brief)"
# CallState.* first in a process of its own: a shape's first call (its one-time host work,
# the scratch pool's creation) inside a graph capture is only cold there.
echo "CallState alone: $(build/hopper/tests/dhp_gpu_tests --gtest_filter='CallState.*' --gtest_brief=1 2>&1 | tee "$out/call-state.log" | brief)"
echo "CallState alone, lists forced: $(DHP_SM90_SCHEDULE_TABLE=2 build/hopper/tests/dhp_gpu_tests --gtest_filter='CallState.*' --gtest_brief=1 2>&1 | tee "$out/call-state-lists.log" | brief)"
echo "GPU suite: $(build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite.log" | brief)"
i=0
for setting in "$@"; do
  i=$((i + 1))
  echo "GPU suite, ${setting%%=*}: $(env ${setting#*=} build/hopper/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | tee "$out/suite-$i.log" | brief)"
done
echo "$(python3 tools/validate/per_pc.py build/hopper/src/libdhp_attention.so 2>&1 | tail -2)"
