#!/usr/bin/env bash
# Session 54's change to take_lists (sm90/scheduler.cuh): causal rows whose
# kHeavyFirst snake reads more K/V per round than L2 holds now take the
# balanced lists (modelled up to 3 % worse). Two GPU calls, chained:
#   OUT=dir scripts/stream-lists-check.sh build   # suites (build, tests), then the
#       dhp_bench burst A/B: snake (the old choice), shipped (the lists),
#       lists in 4x wider windows; ROUNDS rounds (default 5), order rotated
#   OUT=dir scripts/stream-lists-check.sh python  # the package, then the same rows
#       through Python, snake against shipped, in a burst and at the cap, with
#       cuDNN beside them; then the benchmark command (issue 6's figures)
# The rows: the five FA3-grid causal rows (fp16) that the rule changes, and D128 S8192, which
# took the lists before (dhp_schedule_model).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-stream-lists-out}"; mkdir -p "$out"; out=$(cd "$out" && pwd)  # absolute: the runs below cd to /tmp
rows="2,32,8192,64 1,32,16384,64 2,16,8192,128 1,16,16384,128 2,8,8192,256 1,8,16384,256"
cases=""; for r in $rows; do cases="$cases --case $r,1"; done
case "${1:-}" in
  build)
    OUT="$out/s" scripts/hopper-suites.sh || exit 1
    BENCH_ARGS="$cases" ROUNDS="${ROUNDS:-5}" OUT="$out/sweep" scripts/env-sweep.sh \
      snake="DHP_SM90_SCHEDULE_TABLE=0" shipped="" x4="DHP_SM90_SCHEDULE_TABLE=2 DHP_SM90_LIST_WINDOW=4"
    ;;
  python)
    python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
      { echo "pip install failed"; tail -20 "$out/pip.log"; exit 1; }
    (cd /tmp && python3 -u "$repo/scripts/sustained-env-ab.py" --rounds 3 --sdpa $cases \
      snake=DHP_SM90_SCHEDULE_TABLE=0 shipped=DHP_SM90_SCHEDULE_TABLE=1) > "$out/burst.md" 2>&1
    (cd /tmp && python3 -u "$repo/scripts/sustained-env-ab.py" --rounds 2 --sdpa --preload-s 2 --iters 200 $cases \
      snake=DHP_SM90_SCHEDULE_TABLE=0 shipped=DHP_SM90_SCHEDULE_TABLE=1) > "$out/sustained.md" 2>&1
    (cd /tmp && python3 -m dhp_attention.bench --out-dir "$out" > "$out/bench.log" 2>&1) &&
      python3 scripts/bench-summary.py "$out/bench.json" > "$out/bench-summary.md" 2>&1
    echo "== burst (10 warm-up, 30 timed; median of rounds)"; cat "$out/burst.md"
    echo "== at the cap (2 s of the same calls first)"; cat "$out/sustained.md"
    echo "== the benchmark command"; tail -40 "$out/bench-summary.md"
    echo "== its causal rows at S >= 8192 (ours / cuDNN)"
    python3 - "$out/bench.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["group"] == "grid" and r["causal"] and r["S"] >= 8192:
        print(f'{r["dtype"]} B{r["B"]} H{r["Hq"]} S{r["S"]} D{r["D"]}: {r["tflops"]["dhp"] / r["tflops"]["cuDNN"]:.3f}')
PY
    ;;
  *) echo "usage: OUT=dir $0 build|python"; exit 2 ;;
esac
