"""Side-by-side benchmark: dhp_attention against PyTorch SDPA's FlashAttention-2,
cuDNN and memory-efficient backends, in one process on one GPU, on the same
inputs.

    python -m dhp_attention.bench            # full run (a few minutes on an H100/H200)
    python -m dhp_attention.bench --quick    # about a minute
    python -m dhp_attention.bench --out-dir results/   # where bench.json and bench.png go

Configurations: the FlashAttention-3 paper grid (16k tokens, hidden 2048:
D in {64, 128, 256}, S in {512 ... 16384}, B = 16384/S, H = 2048/D, causal
and not, fp16 and bf16); the small configuration B=1, H=8, S=512, D=64 in
eager mode and replayed as CUDA graphs (>= 1000 runs, full statistics); GQA
(H_q=32, H_kv=8, D=128, S=4096); secret lengths (S_max=4096, random lengths;
peers get the equivalent boolean mask, or n/a where a backend takes none).
Timing: CUDA events around every call, warm-up first, median of >= 30 runs
per contestant taken in 5 interleaved rounds (all contestants in turn, the
first one rotating, so that drift on a power-limited GPU falls on all alike),
inputs rotated over several sets when one set would sit in L2. FLOPs:
4*B*H_q*S^2*D, halved for causal; secret-length rows count the padded
problem, which is the work a constant-time kernel does. Every row's output is
cross-checked against an SDPA backend; a wrong row shows FAIL, not a number.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention

PEERS = {"FA2": SDPBackend.FLASH_ATTENTION, "cuDNN": SDPBackend.CUDNN_ATTENTION,
         "mem-eff": SDPBackend.EFFICIENT_ATTENTION}
CONTESTANTS = ["dhp"] + list(PEERS)
ROUNDS = 5  # interleaved timing rounds per grid row (run_config)
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2}  # relative L2 of ours vs the SDPA reference
DT_NAME = {torch.float16: "fp16", torch.bfloat16: "bf16"}


# --------------------------------------------------------------------------
# Environment and configurations

def environment() -> dict:
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        driver = "unknown"
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": p.name, "sms": p.multi_processor_count, "l2_bytes": getattr(p, "L2_cache_size", 0),
            "capability": f"{p.major}.{p.minor}", "driver": driver, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "dhp_attention": dhp_attention.__version__, "python": platform.python_version(),
            "dhp_kernel_env": os.environ.get("DHP_KERNEL", ""),  # kernel choice, when the library reads one
            "command": " ".join(["python -m dhp_attention.bench"] + sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def configs(quick: bool) -> list:
    out = []
    seqs = [1024, 4096] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    for dtype in [torch.float16] if quick else [torch.float16, torch.bfloat16]:
        for D in [64, 128] if quick else [64, 128, 256]:
            for causal in (False, True):
                for S in seqs:
                    out.append(dict(group="grid", dtype=dtype, B=16384 // S, Hq=2048 // D, Hkv=2048 // D, S=S, D=D,
                                    causal=causal, lengths=False))
    for causal in (True,) if quick else (False, True):
        out.append(dict(group="gqa", dtype=torch.bfloat16, B=4, Hq=32, Hkv=8, S=4096, D=128, causal=causal,
                        lengths=False))
        out.append(dict(group="secret-len", dtype=torch.bfloat16, B=4, Hq=16, Hkv=16, S=4096, D=128,
                        causal=causal, lengths=True))
    return out


def flops(c) -> float:
    return 4.0 * c["B"] * c["Hq"] * c["S"] ** 2 * c["D"] / (2 if c["causal"] else 1)


# --------------------------------------------------------------------------
# Inputs and contestants

def input_sets(c, l2_bytes: int) -> list:
    """One or more input sets; several when one would fit in L2 (so repeated
    calls do not read a warm cache). BSHD memory viewed as [B, H, S, D], the
    layout models hand to SDPA."""
    per_set = 2 * c["B"] * c["S"] * (2 * c["Hq"] + 2 * c["Hkv"]) * c["D"]  # q, k, v, o bytes
    n = 1 if per_set >= 2 * l2_bytes else min(256, math.ceil(4 * l2_bytes / per_set))
    sets = []
    for _ in range(n):
        q, k, v = (torch.randn(c["B"], c["S"], h, c["D"], device="cuda", dtype=c["dtype"]).transpose(1, 2)
                   for h in (c["Hq"], c["Hkv"], c["Hkv"]))
        s = dict(q=q, k=k, v=v, lens=None, mask=None)
        if c["lengths"]:
            s["lens"] = torch.randint(1, c["S"] + 1, (c["B"],), device="cuda", dtype=torch.int32)
            s["mask"] = _padding_mask(s["lens"], c["S"], c["causal"])
        sets.append(s)
    return sets


def _padding_mask(lens, S, causal):
    i = torch.arange(S, device="cuda").view(1, 1, S, 1)
    j = torch.arange(S, device="cuda").view(1, 1, 1, S)
    L = lens.view(-1, 1, 1, 1)
    m = (j < L) & (i < L)
    return m & (j <= i) if causal else m


def call(name, c, s):
    """Returns a function that enqueues one call of contestant `name` on input set s."""
    gqa = c["Hq"] != c["Hkv"]
    if name == "dhp":
        kw = dict(seqlens=s["lens"]) if c["lengths"] else {}
        return lambda: dhp_attention.attention(s["q"], s["k"], s["v"], causal=c["causal"], layout="bhsd", **kw)
    if c["lengths"]:
        return lambda: F.scaled_dot_product_attention(s["q"], s["k"], s["v"], attn_mask=s["mask"], enable_gqa=gqa)
    return lambda: F.scaled_dot_product_attention(s["q"], s["k"], s["v"], is_causal=c["causal"], enable_gqa=gqa)


def backend(name):
    return sdpa_kernel([PEERS[name]]) if name in PEERS else _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def rel_l2(x, ref, valid=None):
    x, ref = x.float(), ref.float()
    if valid is not None:  # rows of real queries only ([B, 1, S, 1]); peers may leave NaN in the others
        x, ref = torch.where(valid, x, 0.0), torch.where(valid, ref, 0.0)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


# --------------------------------------------------------------------------
# Timing

def time_events(fns, warmup: int, iters: int) -> list:
    """Times fns[i % len(fns)]() for `iters` calls with CUDA events around each
    call, after `warmup` calls; returns milliseconds per call."""
    for i in range(warmup):
        fns[i % len(fns)]()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (a, b) in enumerate(ev):
        a.record()
        fns[i % len(fns)]()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def as_graphs(fns, pool):
    """One CUDA graph per input set, each replaying a single call."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(side)
    graphs = []
    for f in fns:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            f()
        graphs.append(g.replay)
    return graphs


def chain_graph(fns, n: int):
    """One CUDA graph of n back-to-back calls, fns[i % len(fns)]() for call i
    (warmed up on a side stream first); returns its replay. Timing a replay
    and dividing by n gives the device time per call with the launch gaps a
    serving loop sees (scripts/small-call-methods.py, scripts/decode-shapes.py)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(n):
            fns[i % len(fns)]()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(n):
            fns[i % len(fns)]()
    return g.replay


def stats_us(ms: list) -> dict:
    us = sorted(x * 1000.0 for x in ms)
    pct = lambda p: us[min(len(us) - 1, int(math.ceil(p / 100.0 * len(us))) - 1)]  # noqa: E731
    return {"runs": len(us), "min": us[0], "median": statistics.median(us), "mean": statistics.fmean(us),
            "p95": pct(95), "p99": pct(99), "max": us[-1]}


# --------------------------------------------------------------------------
# Runs

def run_config(c, env, warmup, iters, graph_runs=0, rounds=ROUNDS) -> dict:
    """One row. The contestants are timed in `rounds` interleaved rounds
    (each round: every contestant in turn, the starting one rotating), so
    that clock and power drift on a power-limited GPU -- and, for the small
    configuration's eager calls, which time the host, bursts of other work
    on the host's CPU -- fall on all of them alike instead of on whoever
    runs last; a contestant's figure is the median over all its timed calls.
    The small configuration (graph_runs) times graph_runs calls per
    contestant and mode, eager and as CUDA-graph replays, in each round's
    turn."""
    row = {k: (DT_NAME[v] if k == "dtype" else v) for k, v in c.items()}
    row.update(tflops={}, median_ms={}, error={}, check=None)
    sets = input_sets(c, env["l2_bytes"])
    row["input_sets"] = len(sets)
    outs, fns_by, graphs_by, samples, eager_ms, graph_ms = {}, {}, {}, {}, {}, {}

    def drop(name, e):  # a backend unavailable for this shape, or failing: n/a with its error, no check
        row["error"][name] = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        torch.cuda.synchronize()
        for d in (outs, fns_by, graphs_by, samples, eager_ms, graph_ms):
            d.pop(name, None)

    for name in CONTESTANTS:
        try:
            with backend(name):
                fns = [call(name, c, s) for s in sets]
                outs[name] = fns[0]()
                time_events(fns, warmup, 0)  # warm-up (and any lazy set-up) outside the rounds
                if graph_runs:
                    graphs_by[name] = as_graphs(fns, torch.cuda.graph_pool_handle())
                    time_events(graphs_by[name], warmup, 0)
                    eager_ms[name], graph_ms[name] = [], []
                fns_by[name], samples[name] = fns, []
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            drop(name, e)
    names = list(fns_by)
    per_round = max(1, -(-(graph_runs or iters) // rounds))
    for r in range(rounds if names else 0):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name not in fns_by:  # failed in an earlier round
                continue
            try:
                with backend(name):
                    if graph_runs:
                        eager_ms[name] += time_events(fns_by[name], 1, per_round)
                        graph_ms[name] += time_events(graphs_by[name], 1, per_round)
                    else:
                        samples[name] += time_events(fns_by[name], 1, per_round)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                drop(name, e)
    for name in eager_ms:
        row.setdefault("eager_us", {})[name] = stats_us(eager_ms[name])
        row.setdefault("graph_us", {})[name] = stats_us(graph_ms[name])
        samples[name] = [statistics.median(eager_ms[name])]
    for name, ms in samples.items():
        row["median_ms"][name] = statistics.median(ms)
        row["tflops"][name] = flops(c) / (row["median_ms"][name] * 1e-3) / 1e12
    # Cross-check ours against the first SDPA backend that ran.
    ref_name = next((n for n in PEERS if n in outs), None)
    if "dhp" in outs and ref_name is not None:
        valid = (torch.arange(c["S"], device="cuda").view(1, 1, -1, 1) < sets[0]["lens"].view(-1, 1, 1, 1)) \
            if c["lengths"] else None
        err = rel_l2(outs["dhp"], outs[ref_name], valid)
        row["check"] = {"against": ref_name, "rel_l2": err, "ok": err < TOL[c["dtype"]]}
    else:  # our call failed, or no peer ran to check it against: not a number we can vouch for
        row["check"] = {"against": None, "rel_l2": None, "ok": False}
    del sets, outs
    torch.cuda.empty_cache()
    return row


def label(r) -> str:
    heads = f"{r['Hq']}" if r["Hq"] == r["Hkv"] else f"{r['Hq']}/{r['Hkv']}"
    mask = ("causal" if r["causal"] else "full") + ("+len" if r["lengths"] else "")
    return f"{r['group']:<10} {r['dtype']} B={r['B']:<2} H={heads:<5} S={r['S']:<5} D={r['D']:<3} {mask}"


def progress(i, n, r, t0):
    ours = "FAIL" if r["check"] and not r["check"]["ok"] else f"{r['tflops'].get('dhp', float('nan')):.0f}"
    peers = " ".join(f"{n}={r['tflops'][n]:.0f}" if n in r["tflops"] else f"{n}=n/a" for n in PEERS)
    line = f"[{i:>3}/{n}] {time.time() - t0:6.1f}s  {label(r)}  dhp={ours} {peers} TFLOP/s"
    print(line, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Output

def cell(r, name):
    if name == "dhp" and r["check"] is not None and not r["check"]["ok"]:
        return "FAIL"
    v = r["tflops"].get(name)
    return "n/a" if v is None else f"{v:.1f}"


def table(rows) -> str:
    head = ("| config | dtype | B | H_q/H_kv | S | D | mask | dhp | FA2 | cuDNN | mem-eff | dhp / best peer "
            "| check (rel L2) |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        peers = [r["tflops"][n] for n in PEERS if n in r["tflops"]]
        ok = r["check"] is not None and r["check"]["ok"]
        ratio = f"{r['tflops']['dhp'] / max(peers):.2f}" if ok and peers and "dhp" in r["tflops"] else "n/a"
        chk = "FAIL" if not ok else f"{r['check']['rel_l2']:.1e} vs {r['check']['against']}"
        mask = ("causal" if r["causal"] else "none") + (" + lengths" if r["lengths"] else "")
        lines.append(f"| {r['group']} | {r['dtype']} | {r['B']} | {r['Hq']}/{r['Hkv']} | {r['S']} | {r['D']} | "
                     f"{mask} | " + " | ".join(cell(r, n) for n in CONTESTANTS) + f" | {ratio} | {chk} |")
    return "\n".join(lines)


def small_table(r) -> str:
    lines = [f"Small configuration B={r['B']} H={r['Hq']} S={r['S']} D={r['D']} {r['dtype']} "
             f"{'causal' if r['causal'] else 'non-causal'}: device time per call in µs "
             f"({r['eager_us']['dhp']['runs'] if 'dhp' in r.get('eager_us', {}) else 0} runs each, "
             f"{r['input_sets']} rotated input sets)",
             "| contestant | mode | min | median | mean | p95 | p99 | max | µs/head (median) |", "|" + "---|" * 9]
    for name in CONTESTANTS:
        for mode in ("eager", "graph"):
            s = r.get(f"{mode}_us", {}).get(name)
            if s is None:
                lines.append(f"| {name} | {mode} | n/a | | | | | | |")
                continue
            v = "FAIL" if name == "dhp" and not (r["check"] and r["check"]["ok"]) else None
            vals = [v or f"{s[k]:.1f}" for k in ("min", "median", "mean", "p95", "p99", "max")]
            vals.append(v or f"{s['median'] / (r['B'] * r['Hq']):.2f}")
            lines.append(f"| {name} | {mode} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def small_rows(r) -> list:
    """The small configuration as two table rows: eager and CUDA-graph medians."""
    out = []
    for mode in ("eager", "graph"):
        med = {n: s["median"] for n, s in r.get(f"{mode}_us", {}).items()}
        out.append(dict(r, group=f"small {mode}", tflops={n: flops(r) / (us * 1e-6) / 1e12 for n, us in med.items()}))
    return out


def plot(rows, path) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib not installed"
    grid = [r for r in rows if r["group"] == "grid"]
    panels = sorted({(r["dtype"], r["causal"]) for r in grid})
    dims = sorted({r["D"] for r in grid})
    if not grid:
        return "plot skipped: no grid rows"
    fig, axes = plt.subplots(len(panels), len(dims), figsize=(4.2 * len(dims), 3.2 * len(panels)), squeeze=False)
    for pi, (dt, causal) in enumerate(panels):
        for di, D in enumerate(dims):
            ax = axes[pi][di]
            sel = sorted((r for r in grid if r["dtype"] == dt and r["causal"] == causal and r["D"] == D),
                         key=lambda r: r["S"])
            for name in CONTESTANTS:
                pts = [(r["S"], r["tflops"][name]) for r in sel if name in r["tflops"]
                       and not (name == "dhp" and not (r["check"] and r["check"]["ok"]))]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=name, linewidth=2.5 if name == "dhp" else 1.2)
            ax.set_xscale("log", base=2)
            ax.set_xticks([r["S"] for r in sel], [f"{r['S'] // 1024}k" if r["S"] >= 1024 else str(r["S"])
                                                  for r in sel])
            ax.set_title(f"{dt}, D={D}, {'causal' if causal else 'no mask'}", fontsize=10)
            ax.set_xlabel("sequence length")
            ax.set_ylabel("TFLOP/s")
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot: {path}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dhp_attention.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a subset that runs in about a minute")
    ap.add_argument("--out-dir", default=".", help="folder for bench.json and bench.png (default: .)")
    ap.add_argument("--iters", type=int, default=None, help="timed runs per contestant (default 30; quick 30)")
    ap.add_argument("--small-runs", type=int, default=1000, help="runs of the small configuration per mode")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 0
    # SDPA warns for every shape a backend declines; the table says n/a instead.
    warnings.filterwarnings("ignore", category=UserWarning)
    env = environment()
    print(f"device: {env['device']} (sm_{env['capability'].replace('.', '')}, {env['sms']} SMs), driver "
          f"{env['driver']}; torch {env['torch']} (CUDA {env['cuda']}, cuDNN {env['cudnn']}); "
          f"dhp_attention {env['dhp_attention']}", flush=True)
    iters = args.iters or 30
    warmup = 5
    cfgs = configs(args.quick)
    small = dict(group="small", dtype=torch.float16, B=1, Hq=8, Hkv=8, S=512, D=64, causal=False, lengths=False)
    t0 = time.time()
    rows = []
    n = len(cfgs) + 1
    r_small = run_config(small, env, warmup=50, iters=0, graph_runs=max(1000, args.small_runs))
    progress(1, n, r_small, t0)
    for i, c in enumerate(cfgs, 2):
        rows.append(run_config(c, env, warmup, iters))
        progress(i, n, rows[-1], t0)
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, "bench.json")
    with open(json_path, "w") as f:
        json.dump({"env": env, "small": r_small, "rows": rows, "iters": iters, "warmup": warmup, "rounds": ROUNDS}, f, indent=1)
    note = plot(rows, os.path.join(args.out_dir, "bench.png"))
    fails = sum(1 for r in [r_small] + rows if not (r["check"] and r["check"]["ok"]))
    print(f"\njson: {json_path}; {note}; {time.time() - t0:.0f} s\n")
    print(small_table(r_small) + "\n")
    print(f"TFLOP/s (median of {iters} runs in {ROUNDS} interleaved rounds after {warmup} warm-up; FLOPs 4*B*H_q*S^2*D, halved for causal; "
          f"secret-length rows count the padded problem). {env['device']}, torch {env['torch']}, "
          f"cuDNN {env['cudnn']}. small rows: median of the eager and CUDA-graph runs above.")
    print(table(small_rows(r_small) + rows))
    print(f"\ncross-check: {len(rows) + 1 - fails} ok, {fails} FAIL")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
