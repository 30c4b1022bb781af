#!/usr/bin/env python3
"""The issue-6 figures from a `python -m dhp_attention.bench` result.

    python3 scripts/bench-summary.py OUT/bench.json

Prints: FA3-grid rows with S >= 1024 at >= 1.0x cuDNN (and the ones below),
S = 512 rows at >= 0.9x, median ours/cuDNN and ours/FA2 over the grid, the
secret-length rows against the same kernel's dense bf16 S4096 D128 rows, the
fp16 16k non-causal rows against FlashAttention-3's published H100 figures,
and how many rows passed the benchmark's cross-check. The same parsing gives
every session's summary in docs/results/ and docs/benchmarks.md."""
import json
import statistics
import sys

FA3_PUBLISHED = {64: 497, 128: 648, 256: 756}  # TFLOP/s, fp16, 16k, non-causal (FA3 paper, H100)


def main(path: str) -> int:
    d = json.load(open(path))
    grid = [r for r in d["rows"] if r["group"] == "grid"]
    if not grid:
        print("no grid rows", file=sys.stderr)
        return 1

    def ratio(r):
        return r["tflops"]["dhp"] / r["tflops"]["cuDNN"]

    big = [r for r in grid if r["S"] >= 1024]
    print(f"S>=1024 rows >=1.0x cuDNN: {sum(ratio(r) >= 1.0 for r in big)}/{len(big)}")
    for r in big:
        if ratio(r) < 1.0:
            kind = "causal" if r["causal"] else "non-causal"
            print(f"  below: {r['dtype']} D {r['D']} {kind} S {r['S']} {ratio(r):.3f}")
    s512 = [r for r in grid if r["S"] == 512]
    if s512:
        print(f"S512 rows >=0.9: {sum(ratio(r) >= 0.9 for r in s512)}/{len(s512)}, lowest {min(map(ratio, s512)):.3f}")
    print(f"median ours/cuDNN {statistics.median(map(ratio, grid)):.3f} "
          f"(min {min(map(ratio, grid)):.3f}, max {max(map(ratio, grid)):.3f}); "
          f"ours/FA2 {statistics.median(r['tflops']['dhp'] / r['tflops']['FA2'] for r in grid):.2f}")
    for causal in (False, True):
        sl = [r for r in d["rows"] if r["group"] == "secret-len" and r["causal"] == causal]
        dense = [r for r in grid
                 if r["dtype"] == "bf16" and r["S"] == 4096 and r["D"] == 128 and r["causal"] == causal]
        if sl and dense:
            a, b = sl[0]["tflops"]["dhp"], dense[0]["tflops"]["dhp"]
            print(f"secret-len {'causal' if causal else 'non-causal'}: {a:.1f} / {b:.1f} = {a / b:.3f}")
    for D, published in FA3_PUBLISHED.items():
        rows = [r for r in grid if r["dtype"] == "fp16" and r["S"] == 16384 and r["D"] == D and not r["causal"]]
        if rows:
            t = rows[0]["tflops"]["dhp"]
            print(f"FA3 16k D{D}: {t:.1f} / {published} = {t / published:.2f}")
    print("rows checked:", sum(1 for r in d["rows"] if r.get("check", {}).get("ok")), "of", len(d["rows"]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
