#!/usr/bin/env bash
# Diagnostic for the length-timing failure of gate 1 (issue 5): builds
# dhp_validate in TEST-ONLY variants and runs the large fixed-vs-random
# lengths dudect test on each, with CTA 0's SM cycle count and nanoseconds
# printed by the kernel (DHP_SM90_CYCLE_PROBE), so that a clock effect
# (cycles equal, time differs) can be told from a pipeline effect.
#   probe : the shipped kernel + the probe
#   vfill : V's padding copy holds a finite public pattern, not zeros
#   pfill : zero weights fed to P·V as a public pattern (wrong results)
#   both  : vfill + pfill: no zero operand in P·V at all (wrong results)
# Usage: scripts/length-timing-diag.sh [variant ...]   logs to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-diag-out}"; mkdir -p "$out"
declare -A FLAGS=([probe]="-DDHP_TEST_ONLY_BUILD -DDHP_SM90_CYCLE_PROBE=1"
                  [vfill]="-DDHP_TEST_ONLY_BUILD -DDHP_SM90_CYCLE_PROBE=1 -DDHP_SCRUB_FILL=1"
                  [pfill]="-DDHP_TEST_ONLY_BUILD -DDHP_SM90_CYCLE_PROBE=1 -DDHP_SM90_P_FILL=1"
                  [both]="-DDHP_TEST_ONLY_BUILD -DDHP_SM90_CYCLE_PROBE=1 -DDHP_SCRUB_FILL=1 -DDHP_SM90_P_FILL=1")
variants=("$@"); [ ${#variants[@]} = 0 ] && variants=(probe vfill pfill both)
N="${N:-100000}"
LARGE="--dtype bf16 --batch 2 --heads 16 --seqlen 2048 --head-dim 128 --lengths shared"
for v in "${variants[@]}"; do  # builds in the background of the previous run would disturb it: build all first
  b="build/diag-$v"
  cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_TESTS=OFF \
    -DDHP_BUILD_PYTHON=OFF "-DCMAKE_CUDA_FLAGS=${FLAGS[$v]}" > "$out/configure-$v.log" 2>&1 &&
    cmake --build "$b" -j 16 --target dhp_validate > "$out/build-$v.log" 2>&1 || { echo "$v: build failed"; tail -5 "$out/build-$v.log"; }
done
for v in "${variants[@]}"; do
  exe="build/diag-$v/tools/validate/dhp_validate"; [ -x "$exe" ] || continue
  "$exe" dudect $LARGE --test lengths --measurements "$N" --warmup 2000 --calib 1000 \
    --out "$out/dudect-$v.json" > "$out/run-$v.log" 2> "$out/run-$v.err"
  echo "$v: $(grep '^dudect' "$out/run-$v.log")"
  python3 scripts/cycle_probe_stats.py "$v" "$out/run-$v.log" | tee -a "$out/summary.txt"
done
