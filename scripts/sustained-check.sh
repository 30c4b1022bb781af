#!/usr/bin/env bash
# The power channel under sustained load and the deadline's calibration for
# it (threat model section 8; docs/security-validation.md, "Session 56"), in
# one GPU call of about 7 minutes with the default sections (4 and 5 add about
# 2 minutes each; keep one call under 10 minutes):
#   1. pip-install the package (sm_90a), then the Python GPU tests of the
#      deadline's calibration, the sustained-load one included;
#   2. scripts/sustained-channel.py under the deadline with
#      calibrate_time_budget's default margin on session 56's shape: no class
#      may overrun, and the classes' time per call should agree;
#   3. the channel without the deadline: at session 56's shape by value
#      class (normal, small, sparse, zeros); at D256 and D64 causal by length
#      and value class; the decode step B8 S_q 1 H 32/8 S_k 4096 D128 and
#      the small call by length class from CUDA graphs of 20 calls (the only
#      way Python holds them back to back), the small call also under the
#      deadline;
#   4. the deadline with the default calibration at the other shapes of 3:
#      D256, D64 causal, and the decode step from CUDA graphs (session 57);
#   5. the small call and the decode step from CUDA graphs under budgets
#      calibrated from graphs (calibrate_time_budget(graph=20), session 57).
# Logs to $OUT; the tables last. SECTIONS (default "1 2 3") picks parts.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-sustained-check-out}"; mkdir -p "$out"; out=$(cd "$out" && pwd)
sections="${SECTIONS:-1 2 3}"
on() { [[ " $sections " == *" $1 "* ]]; }
python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
  { echo "pip install failed"; tail -20 "$out/pip.log"; exit 1; }
if on 1; then
  (cd /tmp && DHP_REQUIRE_GPU=1 timeout 300 python3 -m pytest -q -s -p no:cacheprovider "$repo/tests/python/test_gpu.py" \
    -k "calibrat or deadline" > "$out/pytest.log" 2>&1)
  grep -oE "budget (from graphs|[0-9]+ ns: 0 overruns).*" "$out/pytest.log"
  echo "pytest (deadline, calibration): $(tail -1 "$out/pytest.log")"
fi
sc() { local log=$1; shift; (cd scripts && timeout 200 python3 sustained-channel.py "$@" > "$out/$log" 2>&1) ||
  echo "$log: failed or timed out"; }
if on 2; then
  sc deadline-b4-d128.log --deadline --classes max,min,random
fi
if on 3; then
  sc values-b4-d128.log --classes normal,small,sparse,zeros --rounds 2
  sc d256.log --case bf16,4,8,4096,256,0 --classes max,min,normal,zeros --rounds 2
  sc d64-causal.log --case bf16,4,32,4096,64,1 --classes max,min,normal,zeros --rounds 2
  sc small-graph.log --case fp16,1,8,512,64,0 --classes max,min,random --rounds 2 --graph 20
  sc decode-graph.log --decode fp16,8,1,32,8,4096,128,0 --classes max,min,random --rounds 2 --graph 20
  sc small-graph-deadline.log --case fp16,1,8,512,64,0 --classes max,min,random --rounds 2 --graph 20 --deadline
fi
if on 4; then
  sc d256-deadline.log --case bf16,4,8,4096,256,0 --classes max,min,random --rounds 2 --deadline
  sc d64-causal-deadline.log --case bf16,4,32,4096,64,1 --classes max,min,random --rounds 2 --deadline
  sc decode-graph-deadline.log --decode fp16,8,1,32,8,4096,128,0 --classes max,min,random --rounds 2 --graph 20 --deadline
fi
if on 5; then
  sc small-graph-calib.log --case fp16,1,8,512,64,0 --classes max,min,random --rounds 2 --graph 20 --deadline --calib graph
  sc decode-graph-calib.log --decode fp16,8,1,32,8,4096,128,0 --classes max,min,random --rounds 2 --graph 20 --deadline \
    --calib graph
fi
for f in "$out"/*.log; do
  case "$f" in *pip.log|*pytest.log) continue;; esac
  echo; echo "== $(basename "$f")"; grep -E '^(budget|bf16|fp16|\|)' "$f" || tail -5 "$f"
done
exit 0
