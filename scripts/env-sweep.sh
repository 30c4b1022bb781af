#!/usr/bin/env bash
# Runtime A/B of the launcher's public experiment knobs on ONE build (no
# recompilation): each NAME="ENV=VALUE ..." runs dhp_bench with that
# environment, round-robin over ROUNDS (default 3) rounds so that drift falls
# on all alike; prints each row's median TFLOP/s per setting (rows matched by
# position, as scripts/ab-build.sh does, so dense and secret-length rows of
# one shape stay apart), and in brackets the rounds in which each setting
# read above the first.
#   BENCH_ARGS="--case 16,32,1024,64,1" scripts/env-sweep.sh base="" heavy="DHP_SM90_ORDER=2"
# (Re)builds build/hopper's dhp_bench first (a no-op when up to date); logs
# to $OUT (or ./env-sweep-out), whose earlier round files are removed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-env-sweep-out}"; mkdir -p "$out"; rm -f "$out"/*-r*.tsv
{ [ -f build/hopper/build.ninja ] || cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1; } &&
  cmake --build build/hopper -j 16 --target dhp_bench > "$out/build.log" 2>&1 || { echo "build failed"; exit 1; }
names=(); for v in "$@"; do names+=("${v%%=*}"); done
settings=("$@"); n=${#settings[@]}
# Round r starts at setting (r-1) mod n: each setting takes every place in
# the order (a fixed order measured a 1-2 % position effect: perf-log, session 21).
for r in $(seq 1 "${ROUNDS:-3}"); do
  for k in $(seq 0 $((n - 1))); do
    v="${settings[$(((r - 1 + k) % n))]}"
    name="${v%%=*}"; envs="${v#*=}"
    env $envs timeout 300 build/hopper/tools/dhp_bench ${BENCH_ARGS:---quick} --out "$out/$name-r$r.tsv" \
      > "$out/$name-r$r.log" 2>&1 || echo "$name: failed (round $r)"
  done
done
python3 - "$out" "${ROUNDS:-3}" "${names[@]}" <<'PY'
import csv, os, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(n):
    runs = [f"{out}/{n}-r{r}.tsv" for r in range(1, rounds + 1)]
    return [list(csv.DictReader(open(f), delimiter="\t")) for f in runs if os.path.exists(f)]
data = {n: load(n) for n in names}
ref = next((d[0] for d in data.values() if d), None)
if ref is None:
    sys.exit("no results")
print("| row | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for i, row in enumerate(ref):
    key = " ".join(row.get(k, "") for k in ("dtype", "B", "H", "S", "D", "causal", "mode"))
    med = {n: statistics.median(float(r[i]["tflops"]) for r in d) for n, d in data.items() if d}
    base = med.get(names[0])
    cells = [("-" if n not in med else f"{med[n]:.1f}" + (f" ({100 * (med[n] / base - 1):+.1f} %)" if base and n != names[0] else ""))
             for n in names]
    # How many rounds each setting read above the first (round by round).
    for n in names[1:]:
        if n in med and data[names[0]]:
            pairs = list(zip((float(r[i]["tflops"]) for r in data[names[0]]), (float(r[i]["tflops"]) for r in data[n])))
            cells[names.index(n)] += f" [{sum(b > a for a, b in pairs)}/{len(pairs)}]"
    print(f"| {key} | " + " | ".join(cells) + " |")
PY
