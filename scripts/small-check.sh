#!/usr/bin/env bash
# The small configuration (B=1, H=8, S=512, D=64 fp16) on the GPU machine:
# the graph launch floor of this GPU, the per-call time as a CUDA graph
# replay (with programmatic dependent launch on and off; S = 128 ... 2048
# beside it, so the slope gives a key tile's cost on one CTA's chain), and
# the kernel's own duration under Nsight Compute (clocks as found; ncu
# flushes the caches, so it reads DRAM where the graph replay hits L2).
#   CUDA_FLAGS="-DDHP_SM90_SPIN_WAITS=1" scripts/small-check.sh [KEY=VALUE ...]
# CUDA_FLAGS: a compile-time variant (built in build/small-<name>);
# KEY=VALUE: environment for every run (launch.cuh's knobs).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-small-check-out}"
mkdir -p "$out"
flags="${CUDA_FLAGS:-}"
build="build/small-$(echo "$flags" | md5sum | cut -c1-8)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF \
  "-DCMAKE_CUDA_FLAGS=$flags" > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build "$build" -j 16 --target dhp_bench dhp_launch_floor > "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | head -30; exit 1; }
echo "variant: [${flags}] env [$*]"
"$build/tools/dhp_launch_floor"
for pdl in 1 0; do
  env "$@" DHP_SM90_PDL=$pdl "$build/tools/dhp_bench" --only graph |
    awk -v p=$pdl '/graph/ {printf "graph replay, S %5d, PDL %s: %5.2f us per call\n", $4, p, $7 * 1000}'
done
ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 40 --launch-count 3 \
  env "$@" "$build/tools/dhp_bench" --only graph > "$out/ncu.log" 2>&1
grep -E "gpu__time_duration" "$out/ncu.log" | awk '{print "ncu kernel duration (S 512, cold L2): " $NF " " $(NF-1)}'
