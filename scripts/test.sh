#!/usr/bin/env bash
# Builds everything and runs all the tests (CPU tests everywhere; GPU tests
# run on a GPU machine and print "skipped: no CUDA device" elsewhere).
# Usage: scripts/test.sh [preset]   (default: release = sm_80 + sm_90a)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset" --timeout 600
