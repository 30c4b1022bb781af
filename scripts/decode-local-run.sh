#!/usr/bin/env bash
# The GPU runs that decided the merging decode units (decode_local.cuh,
# docs/perf-log.md sessions 36-37; shipped since session 37, when the
# DHP_SM90_DECODE_LOCAL build macro they needed went away), in two calls:
# PART=1 ran past 600 s in session 37 (GATES=0, or GATE_DEADLINE_S=60, keeps
# it inside one call):
#   PART=1: the suites (scripts/hopper-suites.sh) as built, with every
#     S_q <= 64 call on the decode path in merging units, and with the
#     decode path off; then gate 1 (counters, per instruction) on the decode
#     configurations with merging units forced (GATES=0: skip them).
#   PART=2: the decode shapes, two passes (REPEATS) of: as built
#     ("shipped": the launcher's choice), the dense kernels, and every
#     S_q <= 64 call on the decode path in split units, in merging units and
#     in the launcher's choice of the two ("auto": the data for a rule
#     without the S_k >= 4096 clause); scripts/decode-summary.py last.
# Logs to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-decode-local-out}"; mkdir -p "$out"
if [ "${PART:-1}" = 1 ]; then
  OUT="$out" scripts/hopper-suites.sh "merging everywhere=DHP_SM90_DECODE_LOCAL=1 DHP_SM90_DECODE_MAX_SQ=64" \
    "dense=DHP_SM90_DECODE_MAX_SQ=0" || exit 1
  if [ "${GATES:-1}" = 1 ]; then
    # build/hopper: the suites' build, with the same flags (dhp_validate added).
    DHP_SM90_DECODE_LOCAL=1 scripts/dhp-validate --build-dir build/hopper --out "$out/val" --steps counters,perpc \
      --only decode --no-control --deadline-s "${GATE_DEADLINE_S:-200}" > "$out/validate.log" 2>&1
    python3 scripts/perpc-findings.py "$out/val/validation.json" 2>&1 | cut -c1-300 | head -30
    grep -A20 "^== summary" "$out/validate.log"
  fi
else
  shapes="8,64,32,8,4096,128 32,64,32,8,4096,128 1,64,32,8,4096,128 8,64,32,8,16384,128 8,40,32,8,4096,128
8,32,32,32,4096,128 8,16,32,32,4096,128 8,1,32,32,2048,128 1,1,32,32,2048,128 8,64,32,8,1024,128
1,64,32,8,1024,128 8,64,32,8,2048,128 8,40,32,8,1024,128 8,64,32,32,4096,128 1,64,32,32,8192,128
8,64,32,32,8192,128 1,48,32,32,8192,128 8,48,32,32,4096,128 32,8,32,8,4096,128"
  args=""
  for s in $shapes; do args="$args --shape $s"; done
  SUITES=0 OUT="$out" DECODE_ARGS="$args" REPEATS="${REPEATS:-2}" \
    CHUNKS="split=DHP_SM90_DECODE_LOCAL=0,DHP_SM90_DECODE_MAX_SQ=64 merging=DHP_SM90_DECODE_LOCAL=1,DHP_SM90_DECODE_MAX_SQ=64 auto=DHP_SM90_DECODE_MAX_SQ=64" \
    scripts/decode-run.sh > "$out/decode-run.log" 2>&1
  tail -32 "$out/decode-run.log"
fi
