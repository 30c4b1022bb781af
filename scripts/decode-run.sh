#!/usr/bin/env bash
# One GPU run for the decode path (src/kernels/sm90/decode.hpp): the build
# and suites (scripts/hopper-suites.sh; again with every S_q <= 64 call on
# the decode path in one-key-tile chunks: causal masks at S_q > 1 and many
# chunks per row), then the Python package and scripts/decode-shapes.py with
# the decode path as shipped, without it (DHP_SM90_DECODE_MAX_SQ=0: the
# dense kernels, as before), and once per setting in CHUNKS (LABEL=ENV,
# settings separated by spaces, several variables of one setting by commas,
# e.g. "max64=DHP_SM90_DECODE_MAX_SQ=64 rows128=DHP_SM90_DENSE_64ROWS=0,DHP_SM90_DECODE_MAX_SQ=0";
# DECODE_ARGS: extra arguments of decode-shapes.py, e.g. --shape ...).
# SUITES=0: no build or suites; DENSE=0: no dense setting; PEERS=shipped:
# SDPA timed in the shipped setting only (decode-shapes.py --no-sdpa elsewhere). An A/B of
# decode-path settings alone, e.g. the D256 chunk length (session 44):
#   SUITES=0 DENSE=0 REPEATS=2 CHUNKS="c13=DHP_SM90_DECODE_CHUNK=13" \
#     DECODE_ARGS="--shape 1,1,32,8,4096,256 --shape 8,1,32,8,4096,256" scripts/decode-run.sh
# Logs to $OUT; the tables last.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-decode-run-out}"; mkdir -p "$out"
# The suites also run with the decode path off (the dense kernels at the
# small S_q the decode path now takes), with S_q > 1 packing off, and with
# the narrow decode kernel off (the 64-row one at S_q = 1 too).
# EXTRA_SUITE: one more suite setting (LABEL=ENV...).
if [ "${SUITES:-1}" = 1 ]; then
  OUT="$out" scripts/hopper-suites.sh "decode everywhere=DHP_SM90_DECODE_MAX_SQ=64 DHP_SM90_DECODE_CHUNK=1" \
    "dense=DHP_SM90_DECODE_MAX_SQ=0" "unpacked=DHP_SM90_DECODE_PACK_SQ=0 DHP_SM90_DECODE_MAX_SQ=64" "64-row decode=DHP_SM90_NARROW=0" \
    ${EXTRA_SUITE:+"$EXTRA_SUITE"} || exit 1
fi
# CUDA_FLAGS: extra nvcc flags for both builds (hopper-suites.sh, the package).
python3 -m pip install --no-build-isolation --no-deps -C cmake.define.DHP_CUDA_ARCHS=90a \
  "-C" "cmake.define.CMAKE_CUDA_FLAGS=${CUDA_FLAGS:-}" . > "$out/pip.log" 2>&1 ||
  { echo "pip install failed"; tail -20 "$out/pip.log"; exit 1; }
# REPEATS=N: the settings N times in turn (A B C A B C ...), each pass in
# processes of its own, so that a drift of the GPU's clocks over the run
# shows as a spread instead of as a difference between settings (one run of
# session 36 read the same kernel 8-14 % apart in two settings); then
# scripts/decode-summary.py prints each setting's median over the passes.
reps="${REPEATS:-1}"
for ((rep = 1; rep <= reps; ++rep)); do
  # DENSE=0: no "dense" setting (an A/B of decode-path settings alone).
  settings=("shipped=")
  [ "${DENSE:-1}" = 1 ] && settings+=("dense=DHP_SM90_DECODE_MAX_SQ=0")
  for v in "${settings[@]}" ${CHUNKS:-}; do
    vars="${v#*=}"
    log="$out/decode-${v%%=*}.log"
    [ "$reps" -gt 1 ] && log="$out/decode-${v%%=*}-r$rep.log"
    pass=""
    [ "$reps" -gt 1 ] && pass=" (pass $rep of $reps)"
    echo "== ${v%%=*} ${vars//,/ }$pass"
    peers=""
    [ "${PEERS:-all}" = shipped ] && [ "${v%%=*}" != shipped ] && peers="--no-sdpa"
    env ${vars//,/ } python3 scripts/decode-shapes.py ${QUICK:+--quick} $peers ${DECODE_ARGS:-} 2>&1 | tee "$log" | tail -11
  done
done
[ "$reps" -gt 1 ] && python3 scripts/decode-summary.py "$out"
