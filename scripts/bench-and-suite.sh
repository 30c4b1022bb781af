#!/usr/bin/env bash
# One GPU run for a kernel change: builds the GPU suite, runs it by shape,
# with each D = 64 tile height forced and each D = 256 main loop forced,
# then installs the Python package and runs the benchmark command (python -m dhp_attention.bench). Logs to $OUT.
set -uo pipefail
# A missing device fails the tests here instead of skipping them, and a
# call the Hopper kernel should take cannot pass on the portable one.
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
out="${OUT:-bench-and-suite-out}"; mkdir -p "$out"
cmake -S . -B build/suite -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF > "$out/configure.log" 2>&1 &&
  cmake --build build/suite -j 16 --target dhp_gpu_tests > "$out/build.log" 2>&1 || { echo "build failed"; exit 1; }
echo "spills $(grep -cE '[1-9][0-9]* bytes spill' "$out/build.log"); wgmma serialised (C751x) $(grep -c 'C751[0-9]' "$out/build.log")"
echo "GPU suite by shape: $(build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, D64 128-row tiles: $(DHP_SM90_D64_ROWS=128 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, D64 64-row tiles: $(DHP_SM90_D64_ROWS=64 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, D64 32-row tiles: $(DHP_SM90_D64_ROWS=32 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, D256 one GEMM in flight wherever built (no secret lengths): $(DHP_SM90_D256_ONE_GEMM=1 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, causal schedule lists wherever tiles outnumber CTAs: $(DHP_SM90_SCHEDULE_TABLE=2 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, one CTA per SM everywhere: $(DHP_SM90_GRID=full build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, V copy beside the attention wherever there are lengths, 16-CTA grid: $(DHP_SM90_V_COPY=beside DHP_SM90_GRID=16 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
echo "GPU suite, D256 overlapped loop everywhere: $(DHP_SM90_D256_ONE_GEMM=0 build/suite/tests/dhp_gpu_tests --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|FAILED)' | tr '\n' ' ')"
python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 || { echo "pip install failed"; tail -5 "$out/pip.log"; exit 1; }
(cd /tmp && python3 -m dhp_attention.bench --out-dir "$out" ${BENCH_FLAGS:-}) > "$out/bench.log" 2>&1
echo "bench rc $?"
