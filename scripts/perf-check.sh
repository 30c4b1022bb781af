#!/usr/bin/env bash
# Performance check on the GPU machine (the loop for kernel work): builds the
# benchmark and the GPU suite for sm_90a only, runs the GPU suite on each
# kernel in $TEST_KERNELS, the benchmark on each kernel in $KERNELS, then
# PyTorch SDPA (cuDNN, FlashAttention-2) on the same rows in the same run,
# and prints one table last: one TFLOP/s column per kernel, ratios to cuDNN.
#   KERNELS="hopper portable" TEST_KERNELS="hopper" scripts/perf-check.sh [--quick]
# An entry may carry extra environment for an A/B run:
#   KERNELS="hopper hopper:DHP_SM90_GRID=tiles,DHP_SM90_ORDER=2"
# BENCH_ARGS replaces the benchmark arguments (e.g. "--case 1,8,512,64,0,1").
# Logs go to $OUT (or ./perf-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-perf-check-out}"
mkdir -p "$out"
kernels="${KERNELS:-hopper}"
test_kernels="${TEST_KERNELS:-$kernels}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
start=$(date +%s)
cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build --preset hopper -j 16 --target dhp_gpu_tests dhp_bench > "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s; spills: $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log"); wgmma serialised (C751x): $(grep -c 'C751[0-9]' "$out/build.log")"
rc=0
for entry in $test_kernels; do
  k="${entry%%:*}"; extra=""; [ "$k" != "$entry" ] && extra="${entry#*:}"
  tag="$(echo "$entry" | tr ':,=' '_._')"
  env DHP_KERNEL="$k" ${extra//,/ } timeout 300 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 > "$out/tests-$tag.log" 2>&1 || rc=1
  echo "GPU suite ($entry): $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/tests-$tag.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]" "$out/tests-$tag.log" | head -10
done
tsvs=()
for entry in $kernels; do
  k="${entry%%:*}"; extra=""; [ "$k" != "$entry" ] && extra="${entry#*:}"
  tag="$(echo "$entry" | tr ':,=' '_._')"
  env DHP_KERNEL="$k" ${extra//,/ } timeout 300 build/hopper/tools/dhp_bench ${BENCH_ARGS:-${1:-}} --out "$out/bench-$tag.tsv" \
    > "$out/bench-$tag.log" 2>&1 || { echo "bench ($entry) failed:"; tail -5 "$out/bench-$tag.log"; rc=1; }
  tsvs+=("$tag=$out/bench-$tag.tsv")
done
python3 scripts/sdpa_compare.py "${tsvs[@]}" > "$out/compare.md" 2> "$out/compare.err" || { cat "$out/compare.err"; rc=1; }
echo "total: $(( $(date +%s) - start )) s"
cat "$out/compare.md"
exit $rc
