#!/usr/bin/env bash
# Builds and runs tools/microbench/alu_beside_wgmma.cu on the GPU machine
# (sm_90a): cycles of a softmax-like ALU stream alone and beside a wgmma
# chain of its own warpgroup or of another one. Log to $OUT if set.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${TMPDIR:-/tmp}/alu_beside_wgmma"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -Xptxas=-v tools/microbench/alu_beside_wgmma.cu \
  -o "$bin" 2>&1 | grep -E "spill|C75" | grep -vE " 0 bytes spill" || true
"$bin" | tee "${OUT:-.}/alu-beside-wgmma.txt"
