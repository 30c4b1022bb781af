#!/usr/bin/env bash
# Compile-time A/B on the GPU machine: builds the benchmark and the GPU suite
# once per variant (NAME="extra CUDA flags"; the first is the reference),
# runs the GPU suite on every variant but the first, the quick benchmark on
# all, then PyTorch SDPA beside them: one TFLOP/s column per variant.
#   scripts/ab-build.sh base="" bn192="-DDHP_SM90_BN64=192" [--full]
# Logs to $OUT (or ./ab-build-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-ab-build-out}"; mkdir -p "$out"
quick=--quick; variants=()
for a in "$@"; do [ "$a" = --full ] && quick="" || variants+=("$a"); done
tsvs=(); first=1
for v in "${variants[@]}"; do
  name="${v%%=*}"; flags="${v#*=}"
  cmake -S . -B "build/ab-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF \
    "-DCMAKE_CUDA_FLAGS=$flags" > "$out/configure-$name.log" 2>&1 &&
    cmake --build "build/ab-$name" -j 16 --target dhp_bench dhp_gpu_tests > "$out/build-$name.log" 2>&1 ||
    { echo "$name: build failed"; grep -m5 error "$out/build-$name.log"; continue; }
  line="$name [$flags]: spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build-$name.log")"
  [ $first = 0 ] && line="$line; GPU suite $(build/ab-$name/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
  echo "$line"; first=0
  build/ab-$name/tools/dhp_bench $quick --out "$out/bench-$name.tsv" > "$out/bench-$name.log" 2>&1 && tsvs+=("$name=$out/bench-$name.tsv")
done
python3 scripts/sdpa_compare.py "${tsvs[@]}" 2> "$out/compare.err" | tee "$out/compare.md"
