#!/usr/bin/env bash
# Hopper kernel check on the GPU machine: build (sm_90a), run the GPU test
# suite against the Hopper kernel (v2a, DHP_KERNEL=hopper), its v2b main loop
# (DHP_KERNEL=hopper-overlap) and the portable one, then the quick benchmark
# with each. Logs to $OUT; a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-hopper-check-out}"
mkdir -p "$out"
cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build --preset hopper -j 16 --target dhp_gpu_tests dhp_bench > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -30; exit 1; }
grep -E "spill" "$out/build.log" | sort | uniq -c > "$out/spills.txt"
run_tests() {  # $1 = kernel
  DHP_KERNEL=$1 timeout 300 build/hopper/tests/dhp_gpu_tests --gtest_brief=1 > "$out/tests-$1.log" 2>&1
  echo "tests ($1): rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/tests-$1.log" | tr '\n' ' ')"
}
run_tests hopper
grep -E "FAILED|Failure|error" "$out/tests-hopper.log" | head -20
run_tests hopper-overlap
grep -E "FAILED|Failure|error" "$out/tests-hopper-overlap.log" | head -20
run_tests portable
for k in hopper hopper-overlap portable; do
  DHP_KERNEL=$k timeout 240 build/hopper/tools/dhp_bench --quick --out "$out/bench-$k.tsv" > "$out/bench-$k.log" 2>&1
  echo "bench ($k): rc=$?"
done
echo "== spills =="; cat "$out/spills.txt"
echo "== bench TFLOP/s: config | hopper | hopper-overlap | portable =="
paste "$out/bench-hopper.tsv" "$out/bench-hopper-overlap.tsv" "$out/bench-portable.tsv" |
  awk -F'\t' 'NR > 1 {print $1, "B" $2, "H" $3, "S" $4, "D" $5, ($6 == 1 ? "causal" : ""), "|", $9, "|", $18, "|", $27}'
