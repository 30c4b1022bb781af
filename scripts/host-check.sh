#!/usr/bin/env bash
# The eager host path on the GPU machine, in one call: pip-install the
# package (sm_90a only), run the pytest suite, show that the eager-plan test
# can fail (a mutant that keys plans on the shape alone must fail it), and
# print scripts/host-overhead.py's table last. Logs go to $OUT.
#   scripts/host-check.sh
set -uo pipefail
# A missing device fails the tests here instead of skipping them, and a
# call the Hopper kernel should take cannot pass on the portable one.
export DHP_REQUIRE_GPU=1 DHP_NO_PORTABLE_FALLBACK=1
cd "$(dirname "$0")/.."
repo=$(pwd)
out="${OUT:-host-check-out}"
mkdir -p "$out"
python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a . > "$out/pip.log" 2>&1 ||
  { tail -30 "$out/pip.log"; exit 1; }
cd /tmp
timeout 300 python3 -m pytest "$repo/tests/python" -q -rs -p no:cacheprovider > "$out/pytest.log" 2>&1
rc=$?
echo "pytest rc $rc: $(tail -1 "$out/pytest.log")"
grep -E "^(FAILED|ERROR)" "$out/pytest.log" | head -20
pkg=$(python3 -c "import dhp_attention, os; print(os.path.dirname(dhp_attention.__file__))")
cp "$pkg/_torch_ops.py" "$out/_torch_ops.py.orig"
sed -i 's/return None if t is None else (t.shape, t.stride(), t.dtype, t.is_cuda, t.get_device())/return None if t is None else (t.shape,)/' \
  "$pkg/_torch_ops.py"
if grep -q "else (t.shape,)" "$pkg/_torch_ops.py"; then
  python3 -m pytest "$repo/tests/python/test_gpu.py" -q -p no:cacheprovider -k eager_plans > "$out/mutant.log" 2>&1
  m=$?
  echo "mutant (plans keyed on the shape alone): pytest rc $m (1 = the test caught it): $(grep -E '^E ' "$out/mutant.log" | head -2 | tr '\n' ' ')"
else
  echo "mutant: the sed did not apply (the _meta line changed?)"; rc=1
fi
cp "$out/_torch_ops.py.orig" "$pkg/_torch_ops.py"
python3 "$repo/scripts/host-overhead.py" --rounds 5 | tee "$out/host.txt"
exit $rc
