#!/usr/bin/env bash
# session 31 experiment: half-row kernel at 1 / 2 CTAs per SM, with/without PDL
cd "$(dirname "$0")/.."
CASES="--case 1,8,512,64,0,1 --case 1,8,256,64,0,1 --case 1,4,1024,64,0,1 --case 1,8,512,64,1,1 --case 1,8,1024,64,0,1"
SUITE=0 ROUNDS=3 BENCH_ARGS="$CASES" OUT=$OUT/ab scripts/ab-build.sh one="-DDHP_SM90_HALF_CTAS_PER_SM=1" poll="-DDHP_SM90_CONSUMER_EARLY_WAIT=0" wait="" 2>&1 | grep -E "^\| fp16|spills"
for r in 1 2 3; do for v in one poll wait; do
  DHP_SM90_PDL=0 build/ab-$v/tools/dhp_bench $CASES --out $OUT/nopdl-$v-$r.tsv > /dev/null 2>&1
done; done
python3 - $OUT <<'PY'
import csv,glob,statistics,sys
o=sys.argv[1]
for v in ("one","poll","wait"):
    rows=[list(csv.DictReader(open(f),delimiter="\t")) for f in sorted(glob.glob(f"{o}/nopdl-{v}-*.tsv"))]
    print("PDL=0", v, " ".join(f"{r0['B']}/{r0['H']}/{r0['S']}/{r0['causal']}: {statistics.median(float(r[i]['tflops']) for r in rows):.1f}TF" for i,r0 in enumerate(rows[0])))
PY
