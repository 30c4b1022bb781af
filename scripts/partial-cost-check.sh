#!/usr/bin/env bash
# Partial 192-row blocks weighed by their live warpgroups in the causal D64
# lists, and the non-causal partial-block lists past S_q = 1024 (perf-log,
# session 30): one GPU run. Builds and runs the sm90 tests and the GPU suite
# as shipped and with both knobs set (scripts/hopper-suites.sh), then a
# runtime A/B over ROUNDS rotated rounds: causal D64 S4096 (lists, its last
# block one warpgroup live) dense and with shared secret lengths, causal
# S8192 / S16k (the rule keeps the snake deal in every setting: the noise
# between settings), non-causal S1200 (lists only with the bound moved).
# SWEEP=0 skips the A/B. Logs to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-partial-cost-out}"; mkdir -p "$out"
OUT="$out" scripts/hopper-suites.sh \
  "causal partial costs, lists to S2047=DHP_SM90_CAUSAL_PARTIAL_COST=70,85 DHP_SM90_PARTIAL_LISTS_MAX_S=2047" || exit 1
[ "${SWEEP:-1}" = 0 ] && exit 0
cases="--case 4,32,4096,64,1 --case 4,32,4096,64,1,0,2 --case 2,32,8192,64,1 --case 1,32,16384,64,1 --case 13,32,1200,64"
ROUNDS="${ROUNDS:-5}" BENCH_ARGS="${BENCH_ARGS:-$cases}" OUT="$out/sweep" \
  scripts/env-sweep.sh base="" causal70="DHP_SM90_CAUSAL_PARTIAL_COST=70,85" causal55="DHP_SM90_CAUSAL_PARTIAL_COST=55,75" \
  lists2047="DHP_SM90_PARTIAL_LISTS_MAX_S=2047" 2>&1 | tail -12
