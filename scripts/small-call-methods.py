#!/usr/bin/env python3
"""The small call (B=1 H=8 S=512 D=64 fp16) timed by three methods, to tell
the kernel's time from the launch path's (issue 6's <= 5 us figure):
  single  one CUDA graph per call, CUDA events around each replay (the
          benchmark command's method; includes the GPU-side graph launch);
  chain   one graph of N calls replayed, events around the replay, / N
          (back-to-back: the kernel's own time plus the gap between kernels);
  floor   the same two methods on a one-element torch kernel (x.add_(1)):
          what the launch path alone costs.
Fresh inputs (input sets rotated, together larger than L2) in single and in
chain; `--hot`: one input set for every call (L2-resident, as dhp_bench's
graph case). cuDNN and ours in the same run."""
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention
from dhp_attention.bench import as_graphs, chain_graph, input_sets, time_events

N_CHAIN = 20
c = dict(dtype=torch.float16, B=1, Hq=8, Hkv=8, S=512, D=64, causal=False, lengths=False)
l2 = torch.cuda.get_device_properties(0).L2_cache_size
sets = input_sets(c, l2)
if "--hot" in sys.argv[1:]:
    sets = sets[:1]
x = torch.zeros(1, device="cuda")
fns = {
    "floor (x.add_(1))": [lambda: x.add_(1)],
    "dhp": [lambda s=s: dhp_attention.attention(s["q"], s["k"], s["v"], layout="bhsd") for s in sets],
    "cuDNN": [lambda s=s: F.scaled_dot_product_attention(s["q"], s["k"], s["v"]) for s in sets],
}
print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; {len(sets)} input set(s)")
print("| call | single graph per call, median us | chain of 20 in one graph, us per call |")
print("|---|---|---|")
for name, fs in fns.items():
    ctx = sdpa_kernel([SDPBackend.CUDNN_ATTENTION]) if name == "cuDNN" else torch.no_grad()
    with ctx:
        single = time_events(as_graphs(fs, torch.cuda.graph_pool_handle()), 50, 1000)
        chain = time_events([chain_graph(fs, N_CHAIN)], 10, 200)
    print(f"| {name} | {1000 * statistics.median(single):.1f} | {1000 * statistics.median(chain) / N_CHAIN:.2f} |")
sys.stdout.flush()
