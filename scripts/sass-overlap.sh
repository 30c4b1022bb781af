#!/usr/bin/env bash
# Intra-warpgroup overlap check for the Hopper main loop built with
# -DDHP_SM90_INTRA_WG_OVERLAP=7 (a mask by head dim, 1/2/4 = D64/128/256; off by default): in the SASS of every
# Hopper kernel, counts the MUFU.EX2
# (softmax) between `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S(j+1) landed) and the
# next `... 0x0` (P(j)·V(j) landed). Overlap means most of the exp2 sit in
# that window; 0 means ptxas moved the second wait above the softmax.
#   scripts/sass-overlap.sh [object-or-library]   (default: build/release/src/libdhp_attention.so)
set -euo pipefail
obj="$(realpath "${1:-build/release/src/libdhp_attention.so}")"
command -v nvdisasm >/dev/null || export PATH="$PATH:$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin"))')"
dir="$(mktemp -d)"; trap 'rm -rf "$dir"' EXIT
(cd "$dir" && cuobjdump -xelf all "$obj" >/dev/null)
for c in "$dir"/*sm_90a.cubin; do
  nvdisasm -c "$c" | awk '
    /^\.text\./ { name = $0; inwin = 0 }
    /DEPBAR.LE gsb0, 0x1/ { inwin = 1; n = 0; ex = 0; next }
    inwin && /DEPBAR.LE gsb0, 0x0/ {
      if (name ~ /Sm90Traits/) { sub(/^\.text\./, "", name); printf "%s|EX2 between waits: %3d  (instructions: %d)\n", name, ex, n }
      inwin = 0 }
    inwin && /\/\*[0-9a-f]+\*\// { n++ }
    inwin && /MUFU\.EX2/ { ex++ }'
done | c++filt | sed -E 's/^void dhp::sm90::attention_forward_sm90<dhp::sm90::Sm90Traits<([^>]*)> >[^|]*\|/sm90 <\1>  /'
