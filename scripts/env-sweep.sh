#!/usr/bin/env bash
# Runtime A/B of the launcher's public experiment knobs on ONE build (no
# recompilation): each NAME="ENV=VALUE ..." runs dhp_bench with that
# environment, round-robin over ROUNDS (default 3) rounds so that drift falls
# on all alike; prints each case's median TFLOP/s per setting.
#   BENCH_ARGS="--case 16,32,1024,64,1" scripts/env-sweep.sh base="" heavy="DHP_SM90_ORDER=2"
# Builds build/hopper (dhp_bench only) if needed; logs to $OUT (or ./env-sweep-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-env-sweep-out}"; mkdir -p "$out"
[ -x build/hopper/tools/dhp_bench ] || {
  cmake --preset hopper -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 &&
    cmake --build build/hopper -j 16 --target dhp_bench > "$out/build.log" 2>&1 || { echo "build failed"; exit 1; }
}
names=()
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in "$@"; do
    name="${v%%=*}"; envs="${v#*=}"; [ "$r" = 1 ] && names+=("$name")
    env $envs build/hopper/tools/dhp_bench ${BENCH_ARGS:---quick} --out "$out/$name-r$r.tsv" > "$out/$name-r$r.log" 2>&1 ||
      echo "$name: failed (round $r)"
  done
done
python3 - "$out" "${names[@]}" <<'PY'
import csv, glob, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
tab = {}
for n in names:
    for f in sorted(glob.glob(f"{out}/{n}-r*.tsv")):
        for row in csv.DictReader(open(f), delimiter="\t"):
            key = " ".join(row[k] for k in ("dtype", "B", "H", "S", "D", "causal") if k in row)
            tab.setdefault(key, {}).setdefault(n, []).append(float(row["tflops"]))
print("| case | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for key, per in tab.items():
    base = statistics.median(per[names[0]]) if names[0] in per else None
    cells = []
    for n in names:
        if n not in per: cells.append("-"); continue
        m = statistics.median(per[n])
        cells.append(f"{m:.1f}" + (f" ({100 * (m / base - 1):+.1f} %)" if base and n != names[0] else ""))
    print(f"| {key} | " + " | ".join(cells) + " |")
PY
