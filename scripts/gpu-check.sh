#!/usr/bin/env bash
# The one GPU command: build on the GPU machine (sm_90a only, to save device
# time), run every test, the demo, the benchmark and PyTorch SDPA on the
# same configurations, and print a summary table last. Logs go to $OUT (or
# ./gpu-check-out when OUT is unset).
#   scripts/gpu-check.sh [--quick]
set -uo pipefail
# A missing device fails the tests here instead of skipping them, and a
# call the Hopper kernel should take cannot pass on the portable one.
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
quick="${1:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
start=$(date +%s)
cmake --preset hopper > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
cmake --build --preset hopper -j 16 > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
grep -E "spill|Used [0-9]+ registers" "$out/build.log" | paste - - | sed 's/ptxas info *: //' > "$out/ptxas.txt"
ctest --preset hopper --timeout 900 -j 4 > "$out/ctest.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|\(Failed\)|Skipped" "$out/ctest.log" | tail -15
# ctest ran the GPU suite on the default kernel (Hopper on cc 9.0); run it
# again on the portable kernel.
DHP_KERNEL=portable build/hopper/tests/dhp_gpu_tests --gtest_brief=1 > "$out/gpu-tests-portable.log" 2>&1 || ctest_rc=1
echo "GPU tests on the portable kernel: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/gpu-tests-portable.log" | tr '\n' ' ')"
# And with the causal schedule lists wherever tiles outnumber CTAs (the
# launcher takes them by its load model otherwise).
DHP_SM90_SCHEDULE_TABLE=2 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 > "$out/gpu-tests-lists.log" 2>&1 || ctest_rc=1
echo "GPU tests with schedule lists: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/gpu-tests-lists.log" | tr '\n' ' ')"
# And with one CTA per SM everywhere (non-causal D = 128 launches fewer by
# default: tile_shape.hpp, persistent_ctas).
DHP_SM90_GRID=full build/hopper/tests/dhp_gpu_tests --gtest_brief=1 > "$out/gpu-tests-full-grid.log" 2>&1 || ctest_rc=1
echo "GPU tests with one CTA per SM: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/gpu-tests-full-grid.log" | tr '\n' ' ')"
build/hopper/tools/dhp_demo 2>&1 | tee "$out/demo.log"
build/hopper/tools/dhp_bench $quick --out "$out/bench.tsv" > "$out/bench.log" 2>&1
python3 scripts/sdpa_compare.py "$out/bench.tsv" > "$out/compare.md" 2> "$out/compare.err" || cat "$out/compare.err"
echo "== ptxas (registers / spills) =="
sort -u "$out/ptxas.txt" | head -20
echo "== ctest: $( [ $ctest_rc = 0 ] && echo PASS || echo FAIL ) =="
cat "$out/compare.md"
exit $ctest_rc
