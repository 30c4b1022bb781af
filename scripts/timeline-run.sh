#!/usr/bin/env bash
# TEST-ONLY timeline of CTA 0 on the GPU machine: builds dhp_bench with
# DHP_SM90_TIMELINE=20 (sm90/timeline_probe.cuh; never a shipped build),
# runs a few --case rows and prints, for the 20th launch of each, the
# per-tile boundary stamps ("tiles row R tile T: 8 events", cycles from
# consumer 0's first tile). Logs to $OUT (or ./timeline-out). TL_FLAGS adds
# compile flags (an experiment's -D switches; built in build/tl-x then).
#   scripts/timeline-run.sh [B,H,S,D[,causal] ...]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-timeline-out}"; mkdir -p "$out"
cases=("$@"); [ ${#cases[@]} -gt 0 ] || cases=(32,32,512,64 32,16,512,128 16,32,1024,64)
bdir=build/tl; [ -n "${TL_FLAGS:-}" ] && bdir=build/tl-x
cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF \
  "-DCMAKE_CUDA_FLAGS=-DDHP_TEST_ONLY_BUILD -DDHP_SM90_TIMELINE=20 ${TL_FLAGS:-}" > "$out/cfg.log" 2>&1
cmake --build "$bdir" -j 16 --target dhp_bench > "$out/build.log" 2>&1
echo "wgmma serialised (C751x) in the probe build: $(grep -c 'C751[0-9]' "$out/build.log" || true)"
for c in "${cases[@]}"; do
  echo "== $c"
  "$bdir"/tools/dhp_bench --case "$c" 2>&1 | grep -E "^tiles|^timeline|^ctas|^cta |TFLOP" | head -140
done
