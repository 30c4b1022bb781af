#!/usr/bin/env bash
# Causal calls with separate lengths planned as non-causal (perf-log,
# session 29): one GPU run. Builds and runs the sm90 tests and the GPU suite
# as shipped, with the old causal plan (DHP_SM90_SECRET_DIAGONAL=causal),
# with D64 forced to 128-row tiles and with V's copy forced beside on a
# 16-CTA grid, and the retry-block check (scripts/hopper-suites.sh); then a
# runtime A/B of causal separate-length rows (new plan, new plan with the
# copy before, old plan; ROUNDS rotated rounds) with one non-causal row
# whose path the knob does not touch (the noise between settings); SWEEP=0
# skips the A/B. Logs to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-secret-diagonal-out}"; mkdir -p "$out"
OUT="$out" scripts/hopper-suites.sh "causal plan for a secret diagonal=DHP_SM90_SECRET_DIAGONAL=causal" \
  "D64 128-row tiles=DHP_SM90_D64_ROWS=128" "copy beside on 16 CTAs=DHP_SM90_V_COPY=beside DHP_SM90_GRID=16" || exit 1
[ "${SWEEP:-1}" = 0 ] && exit 0
cases="--case 4,16,4096,128,1,0,1 --case 4,8,4096,256,1,0,1 --case 4,32,4096,64,1,0,1 --case 16,32,1024,64,1,0,1 --case 4,16,4096,128,0,0,1"
ROUNDS="${ROUNDS:-5}" BENCH_ARGS="${BENCH_ARGS:-$cases}" OUT="$out/sweep" \
  scripts/env-sweep.sh new="" new_copy_before="DHP_SM90_V_COPY=before" old="DHP_SM90_SECRET_DIAGONAL=causal" 2>&1 | tail -12
