#!/usr/bin/env bash
# The Python package on a GPU machine, in one call: pip-install it offline
# (sm_90a only, to save build time), run the pytest suite, run the benchmark,
# and print a short summary last. Logs and bench.json/png go to $OUT (or
# ./python-check-out when OUT is unset).
#   scripts/python-check.sh [--quick|--full|--no-bench]   (default --quick)
set -uo pipefail
# A missing device fails the tests here instead of skipping them, and a
# call the Hopper kernel should take cannot pass on the portable one.
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-python-check-out}"
mkdir -p "$out"
mode="${1:---quick}"
py="${PYTHON:-python3}"
archs="${DHP_CUDA_ARCHS:-90a}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$out/gpu.txt"

t0=$(date +%s)
# --no-build-isolation --no-deps: no network on the GPU machine; its image has
# scikit-build-core, nanobind and torch.
if ! "$py" -m pip install --no-build-isolation --no-deps -v -C cmake.define.DHP_CUDA_ARCHS="$archs" . \
    > "$out/pip.log" 2>&1; then
  grep -E "error|Error" "$out/pip.log" | head -30; tail -30 "$out/pip.log"; exit 1
fi
echo "pip install: $(( $(date +%s) - t0 )) s"

# Run from outside the checkout so that the installed package is imported.
cd /tmp
t1=$(date +%s)
timeout 420 "$py" -m pytest "$repo/tests/python" -q -rs -p no:cacheprovider > "$out/pytest.log" 2>&1
pytest_rc=$?
echo "pytest: $(( $(date +%s) - t1 )) s, rc $pytest_rc"
grep -E "^(FAILED|ERROR)|Error|error" "$out/pytest.log" | head -40

bench_rc=0
if [ "$mode" != "--no-bench" ]; then
  flag=""; [ "$mode" = "--quick" ] && flag="--quick"
  t2=$(date +%s)
  timeout 540 "$py" -m dhp_attention.bench $flag --out-dir "$out" > "$out/bench.md" 2> "$out/bench-progress.log"
  bench_rc=$?
  echo "bench: $(( $(date +%s) - t2 )) s, rc $bench_rc"
  tail -3 "$out/bench-progress.log"
fi

echo "== summary =="
"$py" -c "import torch, dhp_attention; print('torch', torch.__version__, 'cuDNN', torch.backends.cudnn.version(), 'dhp_attention', dhp_attention.__version__)"
[ "$mode" != "--no-bench" ] && tail -n 45 "$out/bench.md"
tail -n 1 "$out/pytest.log"
exit $(( pytest_rc != 0 || bench_rc != 0 ))
