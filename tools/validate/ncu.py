"""Nsight Compute helpers shared by scripts/dhp-validate and scripts/ncu-profile:
build the runner, run `ncu` on it, parse the raw CSV page. Standard library only."""
import csv
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The shipped attention kernels and the control share the template name; with
# secret key lengths the Hopper path also runs scrub_v_padding or
# copy_v_beside (the zero-padded copy of V, before or beside the attention),
# which read secrets too and are gated the same way; so is the decode
# path's split_combine (sm90/split_combine.hpp), which merges the partials.
KERNEL_REGEX = "regex:attention_forward|scrub_v_padding|copy_v_beside|split_combine"


def kernel_family(name):
    """Groups profiled launches: one forward call may run more than one kernel."""
    for copy in ("scrub_v_padding", "copy_v_beside", "split_combine"):
        if copy in str(name):
            return copy
    return "attention"


def run(cmd, log=None, timeout=None, env=None):
    """Runs cmd (a list); returns (exit code, combined output). Appends to log."""
    cmd = [str(c) for c in cmd]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
        out += f"\n[timed out after {timeout} s]\n"
    except FileNotFoundError as e:
        out, rc = str(e), 127
    if log is not None:
        with open(log, "a") as f:
            f.write("$ " + " ".join(map(str, cmd)) + f"\n{out}\n[exit {rc}]\n")
    return rc, out


def cuda_arch():
    """sm_90a machine code on Hopper, the exact cc elsewhere (from nvidia-smi)."""
    rc, out = run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    if rc != 0 or not out.strip():
        return "90a"
    major, _, minor = out.strip().splitlines()[0].partition(".")
    return "90a" if major == "9" else major + minor


def build(build_dir, log, targets=("dhp_validate",), leaky=True):
    """Configures (once) and builds the runner; returns the binary path or None."""
    build_dir = Path(build_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        cmd = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
               f"-DDHP_CUDA_ARCHS={cuda_arch()}", "-DDHP_BUILD_TESTS=OFF",
               f"-DDHP_BUILD_LEAKY_CONTROL={'ON' if leaky else 'OFF'}"]
        if run(cmd, log)[0] != 0:
            return None
    rc, _ = run(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 4), "--target", *targets], log)
    exe = build_dir / "tools" / "validate" / "dhp_validate"
    return exe if rc == 0 and exe.exists() else None


def available_metrics(log=None):
    """Base metric names this GPU's ncu knows, or None when the query fails."""
    rc, out = run(["ncu", "--query-metrics"], log=None)
    if log is not None:
        Path(log).write_text(out)
    if rc != 0:
        return None
    names = set()
    for line in out.splitlines():
        m = re.match(r"^([a-z0-9]+__[A-Za-z0-9_]+)\s", line.strip() + " ")
        if m:
            names.add(m.group(1))
    return names or None


def usable(metrics, known):
    """Metrics whose base name ncu knows (launch__* attributes are never listed)."""
    if known is None:
        return list(metrics), []
    keep, drop = [], []
    for m in metrics:
        base = m.split(".")[0]
        (keep if base in known or m.startswith("launch__") else drop).append(m)
    return keep, drop


def profile(exe_args, metrics, csv_path, log, extra=(), timeout=600, kernel_regex=KERNEL_REGEX):
    """Runs the program under ncu (clocks as the card has them) and writes the raw CSV page."""
    cmd = ["ncu", "--clock-control", "none", "--kernel-name", kernel_regex, "--metrics", ",".join(metrics),
           "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(csv_path), *extra,
           *map(str, exe_args)]
    return run(cmd, log, timeout=timeout)


def number(text):
    t = text.strip().replace(",", "")
    try:
        return float(t) if any(c in t for c in ".eE") else int(t)
    except ValueError:
        return t  # "n/a" and the like stay strings


def parse_raw_csv(text):
    """Rows of the raw page, one dict per profiled kernel launch, in launch order."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    rows = []
    for rec in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if not (rec.get("ID") or "").strip().isdigit():
            continue  # the units row
        rows.append({k: (number(v) if k not in ("Kernel Name", "Process Name", "Host Name") else v)
                     for k, v in rec.items() if k is not None})
    rows.sort(key=lambda r: r["ID"])
    return rows


def have(tool):
    return shutil.which(tool) is not None


# ---------------------------------------------------------------------------
# Performance profile of one configuration (scripts/ncu-profile).
# (label, metric, scale): the standard numbers for performance work.
PERF = [
    ("duration (us)", "gpu__time_duration.sum", 1e-3),
    ("SM throughput (% of peak)", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("tensor pipe active (% of peak, elapsed)", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed", 1),
    ("DRAM read (MB)", "dram__bytes_read.sum", 1e-6),
    ("DRAM write (MB)", "dram__bytes_write.sum", 1e-6),
    ("DRAM throughput (% of peak)", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("L2 bytes, all requests (MB)", "lts__t_bytes.sum", 1e-6),
    ("L2 throughput (% of peak)", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    # Where the L2 bytes above come from: the SMs' own requests, and those
    # forwarded from the other L2 partition (a far line is looked up in
    # both); and the L2 hit rate.
    ("L2 sectors requested by SMs (M)", "lts__t_sectors_srcunit_tex.sum", 1e-6),
    ("L2 sectors from the other partition (M)", "lts__t_sectors_srcunit_ltcfabric.sum", 1e-6),
    ("L2 sector hit rate (%)", "lts__t_sector_hit_rate.pct", 1),
    # Issue slots and the pipes the softmax competes for (a metric this ncu
    # does not know is left out): xu runs MUFU (exp2, rcp) and some
    # conversions at 16 results per clock and SM, fma/alu the FP32 and
    # integer work.
    ("issue slots busy (% of peak, active)", "smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
    ("xu pipe, instructions (% of peak, active)", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 1),
    ("fma pipe active (% of peak, active)", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("fmaheavy pipe active (% of peak, active)", "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("alu pipe active (% of peak, active)", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("instructions executed (warp-level)", "smsp__inst_executed.sum", 1),
    ("xu instructions (warp-level)", "smsp__inst_executed_pipe_xu.sum", 1),
    ("fma instructions (warp-level)", "smsp__inst_executed_pipe_fma.sum", 1),
    ("alu instructions (warp-level)", "smsp__inst_executed_pipe_alu.sum", 1),
    # Why warps wait, in cycles per issued instruction (ncu's WarpStateStats):
    # the latency-bound main loops show it as 'wait' (fixed-latency
    # dependencies) and 'barrier' (ping-pong turns), with few eligible warps.
    ("active warps per scheduler", "smsp__warps_active.avg.per_cycle_active", 1),
    ("eligible warps per scheduler", "smsp__warps_eligible.avg.per_cycle_active", 1),
] + [(f"stall '{r}' (cycles per issued instruction)",
      f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", 1)
     for r in ("wait", "barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle",
               "not_selected", "dispatch_stall", "no_instruction")] + [
    ("registers per thread", "launch__registers_per_thread", 1),
    ("shared memory per block, dynamic (B)", "launch__shared_mem_per_block_dynamic", 1),
    ("shared memory per block, static (B)", "launch__shared_mem_per_block_static", 1),
    ("achieved occupancy (% of max warps)", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
    ("grid size (CTAs)", "launch__grid_size", 1),
    ("block size (threads)", "launch__block_size", 1),
    ("SM clock (MHz)", "smsp__cycles_elapsed.avg.per_second", 1e-6),
]


def config_flops(cfg):
    """4*B*H*S_q*S_k*D, halved for causal with a public diagonal (tiles skipped)."""
    a = cfg.split()
    get = lambda k, d: int(a[a.index(k) + 1]) if k in a else d
    sq = get("--seqlen", 512)
    f = 4.0 * get("--batch", 1) * get("--heads", 8) * sq * get("--seqlen-k", sq) * get("--head-dim", 64)
    separate = "--lengths" in a and a[a.index("--lengths") + 1] == "separate"
    return f / 2 if "--causal" in a and not separate else f


def perf_profile(exe, cfg, csv_path, log):
    known = available_metrics()
    metrics, _ = usable([m for _, m, _ in PERF], known)
    # The attention kernel of the second call (--launch-skip counts only the
    # kernels the name filter matches; the copies of V are left out).
    rc, out = profile([exe, "profile", *cfg.split()], metrics, csv_path, log,
                      extra=["--launch-skip", "1", "--launch-count", "1"], kernel_regex="regex:attention_forward")
    return perf_record(rc, csv_path, cfg)


def perf_record(rc, csv_path, cfg):
    """PERF's labelled values (and TFLOP/s for cfg's shape) of the last launch in a raw CSV page."""
    rows = parse_raw_csv(Path(csv_path).read_text()) if Path(csv_path).exists() else []
    rec = {"exit": rc}
    if rows:
        rec["kernel"] = rows[-1].get("Kernel Name", "?")
        for label, m, scale in PERF:
            v = rows[-1].get(m)
            rec[label] = v * scale if isinstance(v, (int, float)) else v
        d = rec.get("duration (us)")
        if isinstance(d, (int, float)) and d > 0:
            rec["TFLOP/s"] = config_flops(cfg) / (d * 1e-6) / 1e12
    return rec


# PyTorch SDPA on the cuDNN backend, for reading its kernel beside ours
# (scripts/ncu-vs-cudnn, scripts/ncu-sass-stalls --cudnn): the workload
# (argv: B H S D causal [S_k H_kv]) and the name filter that picks its attention kernel.
CUDNN_WORKLOAD = ROOT / "scripts" / "cudnn-sdpa-workload.py"
CUDNN_KERNEL_REGEX = "regex:sdpa|fprop|fmha|flash"


def perf_text(cfg, rec):
    lines = [f"ncu-profile ({'clocks as found: --clock-control none'}): {cfg}"]
    if len(rec) <= 1:
        return lines[0] + f"\n  no data (ncu exit {rec.get('exit')}; see validate.log)\n"
    w = max(len(k) for k in rec)
    for k, v in rec.items():
        if k != "exit":
            lines.append(f"  {k:<{w}}  {v:.2f}" if isinstance(v, float) else f"  {k:<{w}}  {v}")
    return "\n".join(lines) + "\n"


def background(cmd, path):
    """Starts cmd with its output into path; None when it cannot start."""
    try:
        return subprocess.Popen([str(c) for c in cmd], stdout=open(path, "w"), stderr=subprocess.STDOUT)
    except OSError:
        return None


def stop(proc):
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def dmon_summary(path):
    """Range of SM clock (MHz) and power (W) in `nvidia-smi dmon -s pc -o T` output."""
    path = Path(path)
    if not path.exists():
        return {}
    head, cols = None, {}
    for line in path.read_text().splitlines():
        parts = line.lstrip("#").split()
        if line.startswith("#") and "pclk" in parts:
            head = parts
            continue
        if head and not line.startswith("#") and len(parts) == len(head):
            for key in ("pwr", "pclk"):
                try:
                    cols.setdefault(key, []).append(float(parts[head.index(key)]))
                except ValueError:
                    pass
    return {f"{k}_{f.__name__}": f(v) for k, v in cols.items() for f in (min, max)}
