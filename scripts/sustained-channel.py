#!/usr/bin/env python3
"""The power channel of threat model section 8 under sustained load: one
public shape, our kernel only, each secret class run alone for seconds at a
time -- as a server answering one prompt's calls would -- with time (CUDA
events) and energy (NVML) per call per class.

Why: the timing gate (dudect) draws the class at random for every launch, so
the GPU's power and clock settle on the mix of the classes and only a launch's
own share of the power difference reaches its time (0.1-1.7 %). At the power cap
a class that runs alone sets the clock by itself. This measures that case.
With --deadline every call runs under a budget from calibrate_time_budget
(calibrated once per mode, on public inputs: full lengths, normal values), and
the overruns per class are counted: the deadline hides a call's duration only
while none overruns.

Classes (comma-separated; each with its own fresh normal inputs):
  min / max / random   secret lengths, every length 1 / S / random in [1, S]
                       (with --decode: the keys' lengths, 1 / S_k / random)
  normal / zeros       no lengths; normal values / every element zero
  small / sparse       no lengths; normal values x 2^-6 (the same mantissas) /
                       normal values with half the elements zero (ReLU-like)
A class may carry a tag, max:a,max:b: instances of one class, each with its own
inputs and buffers (the A/A control: what separates two identical classes).
Rounds alternate the order of the classes; per class the median over rounds
of: us per call, W, mJ per call, and the time and energy against the first
class; the per-round times show the spread.
  python3 scripts/sustained-channel.py [--case bf16,4,16,4096,128,0 | --decode dtype,B,S_q,H_q,H_kv,S_k,D,causal]
                                       [--classes max,min,random] [--window 3] [--rounds 3] [--deadline [--margin 0.05]] [--graph N [--calib graph]]"""
import argparse
import statistics

import torch

import dhp_attention
from contestants import parse, secret_lengths
from nvml_energy import Energy, window

LENGTH_CLASSES, VALUE_CLASSES = ("min", "max", "random"), ("normal", "zeros", "small", "sparse")


def shape_of(case: str, decode: str):
    """(dtype, B, S_q, H_q, H_kv, S_k, D, causal) from --case or --decode."""
    if decode:
        f = decode.split(",")
        if len(f) != 8:
            raise SystemExit("--decode: dtype,B,S_q,H_q,H_kv,S_k,D,causal")
        return (f[0], *map(int, f[1:7]), bool(int(f[7])))
    if len(case.split(",")) != 6:
        raise SystemExit("--case: dtype,B,H,S,D,causal (the classes give the lengths)")
    dt, B, H, S, D, causal, _ = parse(case)
    return dt, B, S, H, H, S, D, causal


def make_call(shape: tuple, cls: str, deadline: bool, margin: float, budgets: dict, graph: int, calib_graph: bool):
    """One call of class `cls` on the shape, or with graph > 0 the replay of
    a CUDA graph of that many: (fn, calls per fn, deadline state or None).
    With S_q == S_k the lengths are shared (seqlens); otherwise (decode) they
    are the keys' (seqlens_k), the query rows all visible."""
    dt, B, Sq, Hq, Hkv, S, D, causal = shape
    cls = cls.split(":")[0]  # "max:a", "max:b": two instances of one class (an A/A control)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    q, k, v = (torch.randn(B, s_, h, D, device="cuda", dtype=dtype).transpose(1, 2)
               for s_, h in ((Sq, Hq), (S, Hkv), (S, Hkv)))
    lens = None
    if cls == "zeros":
        for t in (q, k, v):
            t.zero_()
    elif cls == "small":  # a power of two: the exponents change, the mantissas not (bf16; fp16 loses its tiniest)
        for t in (q, k, v):
            t.mul_(2.0 ** -6)
    elif cls == "sparse":
        for t in (q, k, v):
            t.mul_(torch.rand(t.shape, device="cuda") < 0.5)
    elif cls in LENGTH_CLASSES:
        lens = secret_lengths(cls, B, S)
    elif cls not in VALUE_CLASSES:
        raise SystemExit(f"--classes: unknown class {cls!r} (want {LENGTH_CLASSES + VALUE_CLASSES})")
    kw = dict(seqlens=lens) if Sq == S else dict(seqlens_k=lens)
    state = None
    if not deadline:
        def fn():
            dhp_attention.attention(q, k, v, causal=causal, layout="bhsd", **kw)
        return in_graph(fn, graph) + (state,)
    mode = "lengths" if lens is not None else "dense"
    if mode not in budgets:  # public inputs only: the calibration reads shapes, never these values
        budgets[mode] = dhp_attention.calibrate_time_budget(q, k, v, causal=causal, layout="bhsd", margin=margin,
                                                            graph=graph if calib_graph else 0, **kw)
        print(f"budget ({mode}{', from graphs' if calib_graph else ''}): {budgets[mode] / 1e3:.2f} us", flush=True)
    out, state = torch.empty_like(q), dhp_attention.deadline_state()

    def fn():
        dhp_attention.attention_into(q, k, v, out, causal=causal, layout="bhsd", time_budget_ns=budgets[mode],
                                     deadline_state=state, **kw)
    return in_graph(fn, graph) + (state,)


def in_graph(fn, n: int):
    """(fn, 1), or with n > 0 (the replay of a CUDA graph of n calls of fn, n):
    a call the host enqueues slower than the GPU runs it (the small call) is
    held back to back only from a graph."""
    if n <= 0:
        return fn, 1
    fn()  # outside the capture: lazy loading, the plan caches
    torch.cuda.synchronize()
    g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(side), torch.cuda.graph(g, stream=side):
        for _ in range(n):
            fn()
    torch.cuda.synchronize()

    def replay():
        g.replay()
    replay.inputs = fn  # the graph holds the inputs' addresses, not the tensors: keep them alive
    return replay, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="bf16,4,16,4096,128,0", help="dtype,B,H,S,D,causal (S is S_max)")
    ap.add_argument("--decode", default="", help="dtype,B,S_q,H_q,H_kv,S_k,D,causal instead of --case "
                    "(secret key lengths only; e.g. fp16,8,1,32,8,4096,128,0 with --graph 20)")
    ap.add_argument("--classes", default="max,min,random")
    ap.add_argument("--window", type=float, default=3.0, help="seconds of timed calls per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--deadline", action="store_true", help="every call under a calibrated budget")
    ap.add_argument("--margin", type=float, default=0.05, help="the calibration's margin (with --deadline)")
    ap.add_argument("--graph", type=int, default=0, help="replay a CUDA graph of this many calls (small calls)")
    ap.add_argument("--calib", choices=("stream", "graph"), default="stream",
                    help="with --deadline --graph N: calibrate calls launched from the stream, or from graphs of N")
    ap.add_argument("--nvml-index", type=int, default=None)
    a = ap.parse_args()
    shape = shape_of(a.case, a.decode)
    classes = a.classes.split(",")
    if len(set(classes)) != len(classes):
        raise SystemExit("--classes: a class named twice would be one instance; tag them (max:a,max:b)")
    if a.graph < 0:
        raise SystemExit("--graph: calls per graph, >= 0")
    if a.calib == "graph" and not (a.deadline and a.graph):
        raise SystemExit("--calib graph: needs --deadline and --graph N")
    meter, budgets = Energy(a.nvml_index), {}
    calls = {c: make_call(shape, c, a.deadline, a.margin, budgets, a.graph, a.calib == "graph") for c in classes}
    got = {c: [] for c in classes}  # (s per call, W, J per call, overruns, calls)
    for r in range(a.rounds):
        order = classes[r % len(classes):] + classes[:r % len(classes)]
        for c in (order if r % 2 == 0 else order[::-1]):
            fn, per_fn, state = calls[c]
            window(fn, 1.0, meter)  # the class's own sustained state
            before = int(state[1]) if state is not None else 0
            n, secs, joules, host_secs = window(fn, a.window, meter)
            n *= per_fn
            over = int(state[1]) - before if state is not None else 0
            got[c].append((secs / n, joules / host_secs, joules / n, over, n))
    print(f"{a.decode or a.case}, {a.rounds} rounds of {a.window} s per class" + (", under the deadline" if a.deadline else "")
          + (f", CUDA graphs of {a.graph} calls" if a.graph else ""))
    print("| class | us per call | W | mJ per call | time / " + classes[0] + " | energy / " + classes[0] +
          " | overruns / calls | per-round us |")
    print("|---|---|---|---|---|---|---|---|")
    first = None
    for c in classes:
        m = [statistics.median(x[i] for x in got[c]) for i in range(3)]
        first = first or m
        over, n = sum(x[3] for x in got[c]), sum(x[4] for x in got[c])
        rounds = " / ".join(f"{x[0] * 1e6:.2f}" for x in got[c])
        print(f"| {c} | {m[0] * 1e6:.2f} | {m[1]:.0f} | {m[2] * 1e3:.1f} | {m[0] / first[0]:.4f} | "
              f"{m[2] / first[2]:.4f} | {over if a.deadline else '-'} / {n} | {rounds} |", flush=True)


if __name__ == "__main__":
    main()
