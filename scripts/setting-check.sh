#!/usr/bin/env bash
# Whether a launcher setting (an environment variable, e.g. a schedule knob)
# can become the default: two GPU calls, chained.
#   SETTING="plain=DHP_SM90_LIST_LAYOUTS=1" BENCH_ARGS="--case 32,32,512,64,0 ..." \
#     OUT=dir scripts/setting-check.sh build
#       the suites (build, tests) as shipped and with the setting, then
#       dhp_bench on BENCH_ARGS' rows, shipped against the setting, ROUNDS
#       rounds (default 5), order rotated (scripts/env-sweep.sh)
#   SETTING=... OUT=dir scripts/setting-check.sh bench
#       the package, then the benchmark command RUNS times (default 2) each
#       way, alternating; the shipped runs' own spread; per grid row the medians
#       each way, listed where ours moved by more than 1 %
# Logs to $OUT; the tables last.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-setting-check-out}"; mkdir -p "$out"; out=$(cd "$out" && pwd)  # absolute: the runs below cd to /tmp
setting="${SETTING:?SETTING=LABEL=ENV[ ENV...]}"
label="${setting%%=*}"; envs="${setting#*=}"
case "$envs" in *=*) ;; *) echo "SETTING=$setting: want LABEL=VAR=VALUE[ VAR=VALUE...]"; exit 2 ;; esac
case "${1:-}" in
  build)
    OUT="$out/s" scripts/hopper-suites.sh "$setting" || exit 1
    BENCH_ARGS="${BENCH_ARGS:---quick}" ROUNDS="${ROUNDS:-5}" OUT="$out/sweep" scripts/env-sweep.sh shipped="" "$setting"
    ;;
  bench)
    python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
      { echo "pip install failed"; tail -20 "$out/pip.log"; exit 1; }
    for r in $(seq 1 "${RUNS:-2}"); do
      # Each way first in every other run: a fixed order measured a 1-2 % position effect (session 21).
      ways=(shipped "$label"); [ $((r % 2)) = 0 ] && ways=("$label" shipped)
      for way in "${ways[@]}"; do
        mkdir -p "$out/$way-$r"
        if [ "$way" = shipped ]; then run=(); else run=(env $envs); fi
        (cd /tmp && "${run[@]}" python3 -m dhp_attention.bench --out-dir "$out/$way-$r" > "$out/$way-$r/bench.log" 2>&1) ||
          echo "$way, run $r: the benchmark failed"
      done
    done
    for r in $(seq 1 "${RUNS:-2}"); do
      for way in shipped "$label"; do
        echo "== $way, run $r"; python3 scripts/bench-summary.py "$out/$way-$r/bench.json" 2>&1 | head -4
      done
    done
    python3 - "$out" "${RUNS:-2}" "$label" <<'PY'
import json, os, statistics, sys
out, runs, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
missing = [f"{w}-{r}" for w in ("shipped", label) for r in range(1, runs + 1) if not os.path.exists(f"{out}/{w}-{r}/bench.json")]
if missing:
    sys.exit(f"no bench.json for {', '.join(missing)}: see their bench.log")
def medians(way):  # per grid row: (ours / cuDNN, ours TFLOP/s), medians over runs
    per = {}
    for r in range(1, runs + 1):
        for row in json.load(open(f"{out}/{way}-{r}/bench.json"))["rows"]:
            if row["group"] == "grid":
                key = (row["dtype"], row["D"], row["causal"], row["S"])
                t = row["tflops"]
                if t.get("dhp") and t.get("cuDNN"):
                    per.setdefault(key, []).append((t["dhp"] / t["cuDNN"], t["dhp"]))
    return {k: tuple(statistics.median(x[i] for x in v) for i in (0, 1)) for k, v in per.items()}
a, b = medians("shipped"), medians(label)
if runs >= 2:  # the spread of the shipped runs among themselves: what a row's change is judged against
    per_run = []
    for r in (1, 2):
        rows = json.load(open(f"{out}/shipped-{r}/bench.json"))["rows"]
        per_run.append({(x["dtype"], x["D"], x["causal"], x["S"]): x["tflops"]["dhp"] for x in rows if x["group"] == "grid"})
    spread = sorted(abs(per_run[1][k] / per_run[0][k] - 1) for k in per_run[0] if k in per_run[1])
    print(f"shipped run 2 / run 1, ours: median |change| {100 * statistics.median(spread):.1f} %, largest {100 * spread[-1]:.1f} %")
print(f"median over rows, ours / cuDNN: shipped {statistics.median(v[0] for v in a.values()):.3f}, "
      f"{label} {statistics.median(v[0] for v in b.values()):.3f}")
print(f"rows where ours moved by more than 1 %:")
print(f"| row | ours / cuDNN, shipped | {label} | ours, {label} / shipped |")
print("|---|---|---|---|")
for k in sorted(a):
    if k in b and abs(b[k][1] / a[k][1] - 1) > 0.01:
        print(f"| {k[0]} D{k[1]} {'causal' if k[2] else 'none'} S{k[3]} | {a[k][0]:.3f} | {b[k][0]:.3f} | {b[k][1] / a[k][1]:.3f} |")
PY
    ;;
  *) echo "usage: SETTING=LABEL=ENV... OUT=dir $0 build|bench"; exit 2 ;;
esac
