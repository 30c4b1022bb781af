"""The deadline's helpers (threat model §8): a state for attention_into and a
budget calibrated on public inputs.

A deadline call ends on the GPU at its start + a public budget, so the budget
must cover the slowest call the library can make for that public shape -- and
must be found without the secret inputs, or it would follow them. The
calibration here never reads the caller's values: it allocates buffers of the
same shapes, strides and dtypes, fills them with fresh normal values and
holds every length at its maximum (the most nonzero tensor-core operands: the
highest power, the lowest SM clock, the slowest class in every measurement
so far), and measures what the budget covers: each call's work under the
deadline on the GPU clock, back to back.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from . import _core

torch = _core.torch

# Calls whose batch the host enqueues faster than the GPU runs it (large
# calls) are calibrated under sustained load: warm_s seconds back to back, then
# the measured batches back to back too, never letting the queue run dry. At
# the power cap such a GPU runs its slowest: session 56 measured a B4 H16
# S_max 4096 D128 call at 997 us per call after seconds of full lengths, where
# the earlier form -- a hold and a synchronise around every batch -- had
# measured 917 us, and a budget from it overran on 15 % of such calls
# (docs/security-validation.md, "Session 56").
#
# Calls the host enqueues slower than the GPU runs them (small calls) cannot
# keep it loaded from Python: each batch runs behind a GPU-side hold, so that
# the host enqueues it while the GPU spins and no call's measured work holds
# the host's enqueueing (dhp_validate does the same with its StreamHold).
_BATCH = 32
_MIN_HOLD_CYCLES = 2_000_000  # about 1 ms at the H200's 1.98 GHz
# "Large": a batch's GPU time above 1.25 x its enqueueing time (a margin for
# the host's jitter); the queue then stays full with two batches in flight.
_GPU_BOUND = 1.25


def deadline_state(device=None):
    """A zeroed int64 [3] torch tensor for attention_into's deadline_state
    (start_ns, overruns, last_work_ns), on `device` (default: the current
    CUDA device). Needs PyTorch; other frameworks pass any int64 [3] array."""
    if torch is None:
        raise ImportError("dhp_attention.deadline_state needs PyTorch; pass an int64 [3] CUDA array instead")
    return torch.zeros(3, dtype=torch.int64, device="cuda" if device is None else device)


def _check_calibration_args(tensors, calls, margin, slack_ns, warm_s, graph, stream):
    if torch is None:
        raise ImportError("dhp_attention.calibrate_time_budget needs PyTorch")
    if stream is not None and not isinstance(stream, torch.cuda.Stream):
        raise TypeError(f"stream: calibrate_time_budget takes None or a torch.cuda.Stream, got {type(stream).__name__}")
    for name, t in tensors.items():
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: calibrate_time_budget takes torch tensors (for their shapes, strides and "
                            f"dtypes only), got {type(t).__name__}")
    if isinstance(calls, bool) or not isinstance(calls, int) or not 1 <= calls <= 1_000_000:
        raise ValueError(f"calls: must be an int in 1 .. 1000000 (got {calls!r})")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0.0 <= margin <= 10.0:
        raise ValueError(f"margin: must be a fraction in 0 .. 10 (got {margin!r})")
    if isinstance(slack_ns, bool) or not isinstance(slack_ns, int) or not 0 <= slack_ns <= 1_000_000_000:
        raise ValueError(f"slack_ns: must be an int of ns in 0 .. 1000000000 (got {slack_ns!r})")
    if isinstance(warm_s, bool) or not isinstance(warm_s, (int, float)) or not 0.0 <= warm_s <= 60.0:
        raise ValueError(f"warm_s: must be seconds in 0 .. 60 (got {warm_s!r})")
    if isinstance(graph, bool) or not isinstance(graph, int) or not 0 <= graph <= 1024:
        raise ValueError(f"graph: must be an int of calls per CUDA graph in 0 .. 1024, 0 for none (got {graph!r})")


def _public_like(t, fill_normal: bool):
    """A buffer with t's shape, strides, dtype and device; t's values are not read."""
    if t is None:
        return None
    b = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
    if fill_normal:
        b.normal_()
    return b


def calibrate_time_budget(q, k, v, *, causal: bool = False, scale: Optional[float] = None, seqlens=None,
                          seqlens_q=None, seqlens_k=None, layout: str = "bshd", with_lse: bool = False,
                          calls: int = 16384, margin: float = 0.05, slack_ns: int = 2000, warm_s: float = 2.0,
                          graph: int = 0, stream: Any = None) -> int:
    """A time budget (ns) for attention_into's deadline, measured on public inputs.

    q, k, v and the lengths arrays (torch CUDA tensors) give shapes, strides,
    dtypes and the device only: their values are never read. `calls` calls
    run on fresh normal values with every length at its maximum, back to back
    on `stream` (default: torch's current stream; a torch.cuda.Stream), each
    with a 1 ns budget on a state of the calibration's own: every call overruns (it then ends 2 us past its work) and leaves its
    work -- from the deadline's start stamp to the wait, the span a budget
    must cover -- in the state's last_work_ns. Returns the slowest work x
    (1 + margin) + slack_ns, as dhp_validate's timing gate does (margin
    0.05, slack 2 us; session 50: event-timed calls, 2 048 of them, left 1
    call in 4 400 past such a budget; session 51: this form, 0 overruns in
    3 x 10^6 calls of the 12 us call).

    Large calls (a batch of 32 runs on the GPU for over 1.25 x the time the
    host takes to enqueue it) are measured under sustained load: warm_s
    seconds (0 .. 60) of such calls back to back first, then the measured
    ones without a pause, so that the GPU is at the clock its power cap sets
    for full lengths, its slowest (session 56: a
    budget calibrated with pauses overran on 15 % of full-length calls run
    for seconds). Small calls run each batch behind a GPU-side hold instead,
    so that no call's work holds the host's enqueueing; warm_s is unused
    there.

    graph > 0 (1 .. 1024): the calls will be replayed from CUDA graphs of
    that many calls (a decode loop's usual form), so they are measured so:
    a graph of `graph` calibration calls replayed back to back, warm_s
    seconds first, whatever the call's size, until at least `calls` (a
    multiple of `graph`) are measured. Kernels in a graph start sooner
    after each other than from the stream, so the budget is smaller
    (session 57: 12.1 against 21.1 us for the 12 us call); a call launched
    from the stream under it may overrun. The capture synchronises the
    device and empties torch's cache of free blocks, as torch.cuda.graph
    does.

    The budget covers what was measured: calls queued back to back. Where
    calls start on an idle stream, the host's planning of the call falls
    inside it too (the start is stamped before the launches): calibrate as
    the calls will run, or replay them in a CUDA graph. Calibrate again after
    a change of GPU, clocks, driver or of the other work sharing the GPU, and
    watch deadline_state's overrun count."""
    _check_calibration_args(dict(q=q, k=k, v=v, seqlens=seqlens, seqlens_q=seqlens_q, seqlens_k=seqlens_k),
                            calls, margin, slack_ns, warm_s, graph, stream)
    from . import _problem, attention_into  # the package's entry points (imported here: no import cycle)

    # The library's own checks of the public arguments, on the caller's
    # arrays' descriptions (no value is read), before anything is allocated.
    _problem(_core.describe(q, "q"), k, v, dict(causal=causal, scale=scale, seqlens=seqlens, seqlens_q=seqlens_q,
                                                 seqlens_k=seqlens_k, layout=layout))
    if stream is not None and stream.device != q.device:
        raise ValueError(f"stream: must be on q's device {q.device}, got {stream.device}")
    st = torch.cuda.current_stream(q.device) if stream is None else stream
    s_dim = 1 if layout == "bshd" else 2

    def call(on=None):
        # A 1 ns budget: the call overruns, records its work in last_work_ns
        # and waits to 2 us past it (the library's fixed-time overrun path).
        attention_into(qq, kk, vv, out, lse=lse, causal=causal, scale=scale, layout=layout,
                       stream=st if on is None else on, time_budget_ns=1, deadline_state=cal_state, **lens)

    def fold():
        # The slowest work so far, kept on the GPU (no synchronisation per call).
        torch.maximum(slowest, cal_state[2:], out=slowest)

    # Everything on `st`: the buffers are filled in the order the calls read them.
    with torch.cuda.stream(st):
        qq, kk, vv = (_public_like(t, True) for t in (q, k, v))
        out = _public_like(q, False)
        lse = torch.empty(q.shape[0], q.shape[3 - s_dim], q.shape[s_dim], dtype=torch.float32, device=q.device) \
            if with_lse else None
        # Every length at its maximum: shared lengths cover queries and keys
        # (the API requires S_q == S_k for them), separate ones each their own.
        lens = dict(seqlens=None if seqlens is None else torch.full_like(seqlens, q.shape[s_dim]),
                    seqlens_q=None if seqlens_q is None else torch.full_like(seqlens_q, q.shape[s_dim]),
                    seqlens_k=None if seqlens_k is None else torch.full_like(seqlens_k, k.shape[s_dim]))
        # The calibration's own deadline state (the caller's overrun count
        # stays as it was) and its slowest work in ns, folded on the GPU.
        cal_state = deadline_state(q.device)
        slowest = torch.zeros(1, dtype=torch.int64, device=q.device)
        # Untimed: lazy loading and the library's plan caches. Then one batch
        # timed on the host (its enqueueing: the holds' size) and on the GPU
        # (large or small calls).
        call()
        fold()
        st.synchronize()
        replay = None
        if graph:
            # The calls as the caller's graphs will hold them, each with its
            # fold of the slowest work (warm replays fold too: zeroed after).
            # Captured on a side stream (capture refuses the legacy default
            # stream), replayed on st.
            g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream(q.device)
            side.wait_stream(st)
            with torch.cuda.graph(g, stream=side):
                for _ in range(graph):
                    call(side)
                    fold()
            st.wait_stream(side)
            replay, gpu_bound, host_s = g.replay, True, 0.0
        else:
            ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ev0.record(st)
            t0 = time.perf_counter()
            for _ in range(_BATCH):
                call()
                fold()
            host_s = time.perf_counter() - t0
            ev1.record(st)
            st.synchronize()
            gpu_bound = ev0.elapsed_time(ev1) / 1e3 > _GPU_BOUND * host_s
        hold_cycles = max(_MIN_HOLD_CYCLES, int(2 * host_s * 2.0e9))
        in_flight = []  # events of the batches queued (large calls: the queue never runs dry)

        def queued(n, measure):
            if replay is not None:
                replay()  # on st, the current stream here
            else:
                for _ in range(n):
                    call()
                    if measure:
                        fold()
            if gpu_bound:
                e = torch.cuda.Event()
                e.record(st)
                in_flight.append(e)
                if len(in_flight) > 2:  # two batches stay queued while the host waits for the third
                    in_flight.pop(0).synchronize()
            else:
                st.synchronize()

        if gpu_bound:  # the sustained state: warm_s seconds back to back, the last batch still queued
            t_end = time.perf_counter() + warm_s
            while time.perf_counter() < t_end:
                queued(_BATCH, False)
        slowest.zero_()
        done = 0
        while done < calls:
            n = graph or min(_BATCH, calls - done)  # a graph replays all its calls
            if not gpu_bound and hasattr(torch.cuda, "_sleep"):  # private but long-standing; without it
                torch.cuda._sleep(hold_cycles)  # the budget errs high
            queued(n, True)
            done += n
        st.synchronize()
        slowest_ns = int(slowest.item())
    budget = int(slowest_ns * (1.0 + margin)) + slack_ns
    if budget > _core.MAX_TIME_BUDGET_NS:
        raise ValueError(f"calibrate_time_budget: the slowest call's work ({slowest_ns / 1e6:.3f} ms) with margin "
                         f"and slack exceeds the library's 10 s budget limit")
    return max(1, budget)
