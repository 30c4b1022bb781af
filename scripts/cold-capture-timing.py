#!/usr/bin/env python3
"""Times a CUDA graph captured around a shape's first call in the process
("cold": the shape's one-time host work, schedule lists included, runs during
the capture) against one captured after it ("warm"), replays interleaved, on
random inputs. Session 52 made the schedule cache build during a
capture; before, a cold graph ran without the balanced lists. Run it again
with DHP_SM90_SCHEDULE_TABLE=0 (no lists anywhere) as the control that shows
what the lists are worth on each shape.
  python3 scripts/cold-capture-timing.py [--reps 30]"""
import argparse
import statistics

import torch

import dhp_attention

# (B, S, H_q, H_kv, D), causal fp16: FA3-grid rows where the causal lists are considered.
SHAPES = [(16, 1024, 16, 16, 128), (4, 4096, 16, 16, 128), (8, 2048, 16, 16, 64), (2, 8192, 16, 16, 256)]


def capture(q, k, v, calls):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            o = dhp_attention.attention(q, k, v, causal=True)
    return g, o


def time_replays(g, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def time_eager(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30, help="interleaved rounds of 20 replays each")
    args = ap.parse_args()
    print(f"{'B':>3} {'S':>6} {'H':>5} {'D':>4} | {'cold us':>9} {'warm us':>9} {'eager us':>9} {'cold/warm':>9}")
    for B, S, Hq, Hkv, D in SHAPES:
        q = torch.randn(B, S, Hq, D, device="cuda", dtype=torch.float16)
        k, v = (torch.randn(B, S, Hkv, D, device="cuda", dtype=torch.float16) for _ in range(2))
        cold, o_cold = capture(q, k, v, 1)  # this shape's first call in the process
        warm, o_warm = capture(q, k, v, 1)
        cold.replay()
        warm.replay()
        torch.cuda.synchronize()
        assert torch.isfinite(o_cold).all() and torch.equal(o_cold, o_warm), "cold and warm graphs differ"
        t = {"cold": [], "warm": [], "eager": []}
        for _ in range(args.reps):
            for name, g in (("cold", cold), ("warm", warm)):
                t[name].append(time_replays(g, 20))
            t["eager"].append(time_eager(lambda: dhp_attention.attention(q, k, v, causal=True), 20))
        c, w, e = (statistics.median(t[n]) for n in ("cold", "warm", "eager"))
        print(f"{B:>3} {S:>6} {Hq:>2}/{Hkv:<2} {D:>4} | {c:9.1f} {w:9.1f} {e:9.1f} {c / w:9.4f}")


if __name__ == "__main__":
    main()
