"""The benchmark's bookkeeping, on synthetic rows (runs on any machine with
PyTorch): FLOP counts, statistics, FAIL instead of a number, the table, the
plot. The timed run itself is `python -m dhp_attention.bench` on a GPU."""
from __future__ import annotations

import pytest

from conftest import needs_torch

pytestmark = needs_torch


@pytest.fixture(scope="module")
def bench():
    from dhp_attention import bench
    return bench


def _row(bench, ok=True, causal=False, S=1024, D=128):
    c = dict(group="grid", dtype="fp16", B=16384 // S, Hq=2048 // D, Hkv=2048 // D, S=S, D=D, causal=causal,
             lengths=False)
    f = bench.flops(c)
    ms = {"dhp": 1.0, "FA2": 1.25, "cuDNN": 0.8}
    return dict(c, tflops={n: f / (t * 1e-3) / 1e12 for n, t in ms.items()}, median_ms=ms,
                error={"mem-eff": "No available kernel"}, input_sets=1,
                check={"against": "FA2", "rel_l2": 3e-4 if ok else 0.5, "ok": ok})


def test_flops_count_halves_for_causal(bench):
    c = dict(B=2, Hq=16, S=4096, D=128, causal=False)
    assert bench.flops(c) == 4 * 2 * 16 * 4096**2 * 128
    assert bench.flops(dict(c, causal=True)) == bench.flops(c) / 2


def test_fa3_grid_is_16k_tokens_hidden_2048(bench):
    grid = [c for c in bench.configs(quick=False) if c["group"] == "grid"]
    assert len(grid) == 2 * 3 * 2 * 6
    assert all(c["B"] * c["S"] == 16384 and c["Hq"] * c["D"] == 2048 for c in grid)
    assert {c["group"] for c in bench.configs(quick=True)} == {"grid", "gqa", "secret-len"}


def test_stats(bench):
    s = bench.stats_us([i / 1000.0 for i in range(1, 1001)])  # 1..1000 µs
    assert (s["runs"], s["min"], s["max"], s["p95"], s["p99"]) == (1000, 1.0, 1000.0, 950.0, 990.0)
    assert s["median"] == pytest.approx(500.5) and s["mean"] == pytest.approx(500.5)


def test_table_shows_fail_not_a_number(bench):
    good, bad = _row(bench), _row(bench, ok=False, causal=True)
    t = bench.table([good, bad]).splitlines()
    assert len(t) == 4 and t[0].startswith("| config")
    cells = [c.strip() for c in t[2].split("|")]
    assert cells[8] == f"{good['tflops']['dhp']:.1f}" and cells[11] == "n/a"  # mem-eff declined
    assert cells[12] == "0.80"  # ours / best peer (cuDNN)
    bad_cells = [c.strip() for c in t[3].split("|")]
    assert bad_cells[8] == "FAIL" and bad_cells[12] == "n/a" and bad_cells[13] == "FAIL"


def test_a_failed_call_of_ours_is_a_fail(bench):
    r = _row(bench)
    del r["tflops"]["dhp"]
    r["check"] = {"against": None, "rel_l2": None, "ok": False}
    cells = [c.strip() for c in bench.table([r]).splitlines()[2].split("|")]
    assert cells[8] == "FAIL" and cells[13] == "FAIL"


def test_plot_writes_a_png(bench, tmp_path):
    pytest.importorskip("matplotlib", reason="skipped: matplotlib not installed")
    rows = [_row(bench, S=S, D=D, causal=c) for S in (512, 1024) for D in (64, 128) for c in (False, True)]
    note = bench.plot(rows, str(tmp_path / "b.png"))
    assert note.startswith("plot:") and (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def _fake_call(name, c, s):
    """A stand-in contestant: returns the same tensor as every other; tagged
    with its name for the fake time_events."""
    import torch
    f = lambda: torch.ones(4)  # noqa: E731
    f.who = name
    return f


def test_grid_rows_time_contestants_in_interleaved_rotating_rounds(bench, monkeypatch):
    # Stand-ins for the GPU parts: every contestant returns the same tensor;
    # time_events records who is timed, in what order, and returns fake ms.
    import torch
    order, counts = [], {}

    def fake_time(fns, warmup, iters):
        who = fns[0].who
        if iters:
            order.append(who)
            counts[who] = counts.get(who, 0) + iters
        return [1.0 + 0.1 * CONT.index(who)] * iters

    CONT = bench.CONTESTANTS
    monkeypatch.setattr(bench, "input_sets", lambda c, l2: [{}])
    monkeypatch.setattr(bench, "call", _fake_call)
    monkeypatch.setattr(bench, "time_events", fake_time)
    c = dict(group="grid", dtype=torch.float16, B=1, Hq=2, Hkv=2, S=128, D=64, causal=False, lengths=False)
    row = bench.run_config(c, {"l2_bytes": 0}, warmup=5, iters=30, rounds=5)
    n = len(CONT)
    assert order == [CONT[(r + i) % n] for r in range(5) for i in range(n)]  # each round starts one later
    assert all(counts[name] == 30 for name in CONT)
    assert row["median_ms"] == {name: pytest.approx(1.0 + 0.1 * i) for i, name in enumerate(CONT)}
    assert row["check"]["ok"]  # every contestant returned the same tensor

    # The same row with ours returning something else: the cross-check must fail it.
    def wrong_call(name, c, s):
        f = (lambda: torch.full((4,), 2.0)) if name == "dhp" else (lambda: torch.ones(4))  # noqa: E731
        f.who = name
        return f

    monkeypatch.setattr(bench, "call", wrong_call)
    row = bench.run_config(c, {"l2_bytes": 0}, warmup=5, iters=30, rounds=5)
    assert row["check"]["ok"] is False and row["check"]["rel_l2"] > 0.5


def test_small_configuration_interleaves_eager_and_graph_runs(bench, monkeypatch):
    # The small configuration's eager calls time the host; they are taken in
    # the same rotating rounds as the grid rows, each contestant's eager run
    # followed by its graph replays, so that a burst of other work on the
    # host falls on every contestant alike.
    import torch
    order, counts = [], {}

    def fake_graphs(fns, pool):
        g = lambda: None  # noqa: E731
        g.who = "graph:" + fns[0].who
        return [g]

    def fake_time(fns, warmup, iters):
        who = fns[0].who
        if iters:
            order.append(who)
            counts[who] = counts.get(who, 0) + iters
        base = 10.0 if who.startswith("graph:") else 30.0
        return [base + CONT.index(who.split(":")[-1])] * iters

    CONT = bench.CONTESTANTS
    monkeypatch.setattr(bench, "input_sets", lambda c, l2: [{}])
    monkeypatch.setattr(bench, "call", _fake_call)
    monkeypatch.setattr(bench, "as_graphs", fake_graphs)
    monkeypatch.setattr(bench, "time_events", fake_time)
    monkeypatch.setattr(bench.torch.cuda, "graph_pool_handle", lambda: None)
    c = dict(group="small", dtype=torch.float16, B=1, Hq=8, Hkv=8, S=512, D=64, causal=False, lengths=False)
    row = bench.run_config(c, {"l2_bytes": 0}, warmup=50, iters=0, graph_runs=1000, rounds=5)
    n = len(CONT)
    assert order == [w for r in range(5) for i in range(n) for w in (CONT[(r + i) % n], "graph:" + CONT[(r + i) % n])]
    assert all(counts[name] == 1000 and counts["graph:" + name] == 1000 for name in CONT)
    for i, name in enumerate(CONT):
        assert row["eager_us"][name]["runs"] == 1000 and row["eager_us"][name]["median"] == pytest.approx(
            (30.0 + i) * 1000)
        assert row["graph_us"][name]["median"] == pytest.approx((10.0 + i) * 1000)
        assert row["median_ms"][name] == pytest.approx(30.0 + i)
    assert row["check"]["ok"]


def test_a_contestant_failing_in_a_timed_round_is_dropped(bench, monkeypatch):
    # A peer that raises in its second timed turn: its row entry becomes its
    # error (n/a in the table), it is never the cross-check's reference, and
    # the others keep their figures.
    import torch
    turns = {}

    def fake_time(fns, warmup, iters):
        who = fns[0].who
        if iters:
            turns[who] = turns.get(who, 0) + 1
            if who == "cuDNN" and turns[who] == 2:
                raise RuntimeError("cuDNN Frontend error: stand-in failure\nsecond line")
        return [1.0] * iters

    monkeypatch.setattr(bench, "input_sets", lambda c, l2: [{}])
    monkeypatch.setattr(bench, "call", _fake_call)
    monkeypatch.setattr(bench, "time_events", fake_time)
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda: None)
    c = dict(group="grid", dtype=torch.float16, B=1, Hq=2, Hkv=2, S=128, D=64, causal=False, lengths=False)
    row = bench.run_config(c, {"l2_bytes": 0}, warmup=5, iters=30, rounds=5)
    assert row["error"]["cuDNN"] == "cuDNN Frontend error: stand-in failure"
    assert "cuDNN" not in row["tflops"] and turns["cuDNN"] == 2
    assert all(name in row["tflops"] for name in bench.CONTESTANTS if name != "cuDNN")
    assert row["check"]["ok"] and row["check"]["against"] != "cuDNN"
