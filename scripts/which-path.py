"""Which Hopper path each shape takes, from the kernels a call launches: the
decode path's split units launch the combine kernel after the decode kernel
(traits ending in `true>`: kDecode); its merging units launch the decode
kernel alone; the dense path neither:
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
    decode_kernel = any(re.search(r"Sm90Traits<[^<>]*true>", n) for n in names)
    if any("combine" in n for n in names):
        path = "decode (split units)"
    else:
        path = "decode (merging units)" if decode_kernel else "dense"
    print(f"B{B} S_q {Sq} {Hq}/{Hkv} S_k {Sk} D{D}: {path}  ({'; '.join(n[:60] for n in names)})")
