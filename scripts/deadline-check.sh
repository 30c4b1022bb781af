#!/usr/bin/env bash
# The deadline (threat model §8) on a GPU, in one call: the suites (build,
# sm90 tests, GPU suite with *Deadline*), *Deadline* twice more, the dudect
# deadline rows of the gate, then the small call's deadline row once more
# with --deadline-probe (a diagnostic: per class, the work and the time past
# the deadline on the GPU clock, and the SM clock after the call).
#   OUT=dir scripts/deadline-check.sh
# GATE_S: seconds after which dhp-validate starts no further row (default 200).
# PROBE: the probe's dhp_validate configuration (default: the gate's small row).
# Logs to $OUT; the summary is printed last.
set -uo pipefail
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-deadline-check-out}"; mkdir -p "$out"
t0=$(date +%s)
OUT="$out/suites" scripts/hopper-suites.sh > "$out/suites.txt" 2>&1 || { cat "$out/suites.txt"; exit 1; }
echo "Deadline.* x2: $(build/hopper/tests/dhp_gpu_tests --gtest_filter='*Deadline*' --gtest_repeat=2 --gtest_brief=1 2>&1 |
  tee "$out/deadline-tests.log" | grep -cE '^\[  PASSED') passed runs, $(grep -c FAILED "$out/deadline-tests.log") FAILED lines" >> "$out/summary.txt"
echo "suites done at $(( $(date +%s) - t0 )) s" >> "$out/summary.txt"
python3 scripts/dhp-validate --out "$out/gate" --build-dir build/hopper --no-control --steps dudect \
  --only "lengths, deadline" --deadline-s "${GATE_S:-200}" > "$out/gate.txt" 2>&1
echo "gate rows done at $(( $(date +%s) - t0 )) s" >> "$out/summary.txt"
probe_cfg="${PROBE:---dtype fp16 --batch 1 --heads 8 --seqlen 512 --head-dim 64 --causal --lengths separate}"
exe=$(find build/hopper -name dhp_validate -type f -perm -u+x | head -1)
# shellcheck disable=SC2086
timeout 150 "$exe" dudect $probe_cfg --test lengths --measurements 1000000 --warmup 5000 --calib 20000 \
  --deadline auto --deadline-probe 1 --out "$out/probe.json" > "$out/probe.txt" 2>&1
rc=$?
echo "probe done at $(( $(date +%s) - t0 )) s (rc $rc)" >> "$out/summary.txt"
tar czf "$out/logs.tar.gz" -C "$out" suites gate deadline-tests.log 2>/dev/null && rm -rf "$out/suites" "$out/gate" "$out/deadline-tests.log"
cat "$out/suites.txt"
grep -hE "dudect|deadline|FAIL|PASS" "$out/gate.txt" | tail -20
tail -8 "$out/probe.txt"
cat "$out/summary.txt"
