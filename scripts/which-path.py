"""Which Hopper path each shape takes, from the kernels a call launches: the
decode path's split units launch the combine kernel after a decode kernel
(traits ending in `1>`: the 64-row decode kernel, `2>`: the narrow one,
Sm90Traits' DECODE_); its merging units launch the decode kernel alone; the
dense path neither:
checks the launcher's rule (src/kernels/sm90/decode.hpp, takes_decode_path)
on the GPU, as shipped or under the DHP_SM90_DECODE_* settings in the
environment.

    python3 scripts/which-path.py B,S_q,H_q,H_kv,S_k,D [...]
"""
import re
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import dhp_attention

for arg in sys.argv[1:]:
    B, Sq, Hq, Hkv, Sk, D = (int(x) for x in arg.split(","))
    q = torch.randn(B, Sq, Hq, D, device="cuda", dtype=torch.float16)
    k, v = (torch.randn(B, Sk, Hkv, D, device="cuda", dtype=torch.float16) for _ in range(2))
    dhp_attention.attention(q, k, v)  # loads the module, sets the shared-memory limit
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        dhp_attention.attention(q, k, v)
        torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages()]
    kinds = {m.group(1) for n in names for m in [re.search(r"Sm90Traits<[^<>]*, ([12])>", n)] if m}
    kernel = ", narrow kernel" if "2" in kinds else ", 64-row kernel" if "1" in kinds else ""
    if any("combine" in n for n in names):
        path = f"decode (split units{kernel})"
    else:
        path = f"decode (merging units{kernel})" if kinds else "dense"
    print(f"B{B} S_q {Sq} {Hq}/{Hkv} S_k {Sk} D{D}: {path}  ({'; '.join(n[:60] for n in names)})")
