#!/usr/bin/env bash
# V's copy beside the attention (perf-log, session 28): one GPU run. Builds
# and runs the sm90 tests and the GPU suite as shipped, with the copy forced
# beside on a 16-CTA grid (every producer waits on the copy's counters; some
# attention CTAs wait for SMs the copy holds) and forced before, and the
# retry-block check (scripts/hopper-suites.sh); then a runtime A/B of the
# secret-length rows (copy before against beside, ROUNDS rotated rounds).
# Logs to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-v-copy-out}"; mkdir -p "$out"
OUT="$out" scripts/hopper-suites.sh "copy beside on 16 CTAs=DHP_SM90_V_COPY=beside DHP_SM90_GRID=16" \
  "copy before=DHP_SM90_V_COPY=before" || exit 1
ROUNDS="${ROUNDS:-7}" BENCH_ARGS="${BENCH_ARGS:---quick --only lengths}" OUT="$out/sweep" \
  scripts/env-sweep.sh before="DHP_SM90_V_COPY=before" beside="" first16="DHP_SM90_V_COPY_FIRST=16" 2>&1 | tail -12
