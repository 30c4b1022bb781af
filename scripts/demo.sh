#!/usr/bin/env bash
# The main job: build, then run attention on a default problem, check it
# against the float64 reference and print time and TFLOP/s (on a machine
# without a GPU it says so and exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target dhp_demo
"build/$preset/tools/dhp_demo"
