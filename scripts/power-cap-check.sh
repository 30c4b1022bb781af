#!/usr/bin/env bash
# Perf-log session 53's power-cap questions (Next, items 1-2) in one GPU call.
# Run after scripts/hopper-suites.sh has built build/hopper (dhp_bench). It
# installs the Python package, then on the causal rows that run a kHeavyFirst
# snake (dhp_schedule_model) compares the lists forced (DHP_SM90_SCHEDULE_TABLE=2)
# with the shipped choice (=1) three ways:
#   1. HBM bytes and duration of one call under ncu (dhp_bench; hbm-bytes-ab.py);
#   2. time per call in a burst and at the cap (sustained-env-ab.py, --preload-s);
#   3. energy per call against cuDNN (energy-per-call.py).
# Logs to $OUT (or ./power-cap-out); the tables are printed last. About
# 6-9 minutes: run it in a call of its own.
#   [PIP=0] OUT=dir scripts/power-cap-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-power-cap-out}"; mkdir -p "$out"
rows="2,32,8192,64 1,32,16384,64 1,16,16384,128 2,8,8192,256 1,8,16384,256"
[ -x build/hopper/tools/dhp_bench ] || { echo "build/hopper/tools/dhp_bench missing: run scripts/hopper-suites.sh first"; exit 1; }
# PIP=0: the package is already installed from this tree (an earlier call on the same machine).
if [ "${PIP:-1}" != 0 ]; then
  python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
    { echo "pip install failed"; tail -20 "$out/pip.log"; exit 1; }
fi
cases=""; for r in $rows; do cases="$cases --case $r,1"; done
python3 -u scripts/hbm-bytes-ab.py $cases shipped=DHP_SM90_SCHEDULE_TABLE=1 lists=DHP_SM90_SCHEDULE_TABLE=2 \
  > "$out/ncu.md" 2>&1
(cd /tmp && python3 "$repo/scripts/sustained-env-ab.py" --rounds 2 $cases \
  shipped=DHP_SM90_SCHEDULE_TABLE=1 lists=DHP_SM90_SCHEDULE_TABLE=2) > "$out/burst.md" 2>&1
(cd /tmp && python3 "$repo/scripts/sustained-env-ab.py" --rounds 2 --preload-s 2 --iters 200 $cases \
  shipped=DHP_SM90_SCHEDULE_TABLE=1 lists=DHP_SM90_SCHEDULE_TABLE=2) > "$out/sustained.md" 2>&1
ecases=""; for r in $rows; do ecases="$ecases --case fp16,$r,1"; done
for t in 1 2; do
  (cd /tmp && DHP_SM90_SCHEDULE_TABLE=$t timeout 300 python3 -u "$repo/scripts/energy-per-call.py" --rounds 2 --window 2 $ecases) \
    > "$out/energy-$t.md" 2>&1
done
echo "== HBM bytes (ncu, one call)"; cat "$out/ncu.md"
echo "== burst (10 warm-up, 30 timed)"; cat "$out/burst.md"
echo "== at the cap (2 s of the same calls first)"; cat "$out/sustained.md"
echo "== energy, shipped"; cat "$out/energy-1.md"
echo "== energy, lists forced"; cat "$out/energy-2.md"
