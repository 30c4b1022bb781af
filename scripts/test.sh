#!/usr/bin/env bash
# Builds everything and runs all the tests (CPU tests everywhere; GPU tests
# run on a GPU machine and print "skipped: no CUDA device" elsewhere).
# Usage: scripts/test.sh [preset]   (default: release = sm_80 + sm_90a)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
log=$(mktemp)
set +e
ctest --preset "$preset" --timeout 600 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# ctest hides the output of skipped tests: say plainly whether the GPU suite ran.
gpu_line=$("build/$preset/tests/dhp_gpu_tests" --gtest_filter='ForwardArgs.*' 2>&1 | grep -m1 -o "skipped: no CUDA device" || true)
if [ -n "$gpu_line" ]; then
  echo "GPU tests: $gpu_line (every GPU test above was skipped; run scripts/gpu-check.sh on a GPU machine)"
else
  echo "GPU tests: ran on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
fi
# ctest's summary reads "N% tests passed, F tests failed out of T", or
# "100% tests passed out of T" when nothing failed or was skipped.
total=$(grep -oE "tests? (passed|failed) out of [0-9]+" "$log" | grep -oE "[0-9]+$" | tail -1)
failed=$(grep -oE "[0-9]+ tests? failed out of" "$log" | grep -oE "^[0-9]+" | tail -1)
total=${total:-0}
failed=${failed:-0}
skipped=$(grep -cE "\(Skipped\)$" "$log" || true)
rm -f "$log"
echo "ctest: $(( total - failed - skipped )) passed, ${failed} failed, ${skipped} skipped"
exit "$rc"
