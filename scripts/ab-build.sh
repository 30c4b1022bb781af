#!/usr/bin/env bash
# Compile-time A/B on the GPU machine: builds the benchmark and the GPU suite
# once per variant (NAME="extra CUDA flags"; the first is the reference),
# runs the GPU suite on every variant but the first (SUITE=0: neither
# built nor run), the quick benchmark on
# all, then PyTorch SDPA beside them: one TFLOP/s column per variant.
#   scripts/ab-build.sh base="" bn192="-DDHP_SM90_BN64=192" [--full]
# NAME@DIR=flags builds the source tree in DIR instead (e.g. an earlier
# commit unpacked with git archive). BENCH_ARGS replaces --quick / --full
# with dhp_bench arguments of its own (e.g. "--case 4,8,4096,256").
# ROUNDS=N (default 1) runs the benchmarks N times round-robin over the
# variants (so that clock and temperature drift falls on all alike) and
# keeps each row's median over the rounds. SUITE=0 skips the GPU suite
# (a second call on a warm machine: the builds are then no-ops).
# Logs to $OUT (or ./ab-build-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-ab-build-out}"; mkdir -p "$out"
quick=--quick; variants=()
for a in "$@"; do [ "$a" = --full ] && quick="" || variants+=("$a"); done
tsvs=(); built=(); first=1
for v in "${variants[@]}"; do
  name="${v%%=*}"; flags="${v#*=}"; src=.
  [ "${name#*@}" != "$name" ] && { src="${name#*@}"; name="${name%%@*}"; }
  cmake -S "$src" -B "build/ab-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF \
    "-DCMAKE_CUDA_FLAGS=$flags" > "$out/configure-$name.log" 2>&1 &&
    cmake --build "build/ab-$name" -j 16 --target dhp_bench $([ "${SUITE:-1}" != 0 ] && echo dhp_gpu_tests) > "$out/build-$name.log" 2>&1 ||
    { echo "$name: build failed"; grep -m5 error "$out/build-$name.log"; continue; }
  line="$name [$flags]: spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build-$name.log"); wgmma serialised (C751x) $(grep -c 'C751[0-9]' "$out/build-$name.log")"
  [ $first = 0 ] && [ "${SUITE:-1}" != 0 ] && line="$line; GPU suite $(timeout 300 build/ab-$name/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
  echo "$line"; first=0
  built+=("$name")
done
# Round r starts at variant (r-1) mod n: each variant takes every place in
# the order (a fixed order measured a 1-2 % position effect: perf-log, session 21).
for r in $(seq 1 "${ROUNDS:-1}"); do
  for k in $(seq 0 $((${#built[@]} - 1))); do
    name="${built[$(((r - 1 + k) % ${#built[@]}))]}"
    timeout 300 build/ab-$name/tools/dhp_bench ${BENCH_ARGS:-$quick} --out "$out/bench-$name-r$r.tsv" > "$out/bench-$name.log" 2>&1 ||
      echo "$name: benchmark failed (round $r)"
  done
done
for name in "${built[@]}"; do
  python3 - "$out/bench-$name.tsv" "$out"/bench-$name-r*.tsv <<'PY' && tsvs+=("$name=$out/bench-$name.tsv")
import csv, statistics, sys
rounds = [list(csv.DictReader(open(f), delimiter="\t")) for f in sys.argv[2:]]
rows = rounds[0]
for i, row in enumerate(rows):
    for col in ("median_ms", "min_ms", "tflops"):
        row[col] = f"{statistics.median(float(r[i][col]) for r in rounds):.5f}"
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), delimiter="\t")
    w.writeheader(); w.writerows(rows)
PY
done
python3 scripts/sdpa_compare.py "${tsvs[@]}" 2> "$out/compare.err" | tee "$out/compare.md"
