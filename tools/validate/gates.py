"""dhp-validate: runs the GPU security gates of docs/threat-model.md and judges them.

  gate 1  hardware-counter differential (ncu, >= 10 input classes): kernel
          totals, and per SASS instruction outside the wait-retry blocks
          (per_pc.py); the dudect timing leakage test (fixed vs random
          values; fixed vs random lengths)
  gate 3  bitwise reproducibility (1000 launches) and batch invariance
  also    compute-sanitizer memcheck / racecheck / synccheck / initcheck on small
          configurations, and the leaky control, which must FAIL gate 1, the
          length timing test and (when dhp-audit is built) gate 2.

Writes to --out (default $OUT): validation.json, summary.md, validate.log,
timing-hist.png, t-vs-n.png, raw.tar.gz (ncu CSVs, per-run JSON, sanitizer
logs). Prints the summary table last. Exit 0 iff every shipped-kernel gate
passes and every control run fails.
"""
import argparse
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ncu  # noqa: E402
import per_pc  # noqa: E402

ROOT = ncu.ROOT

from gate_configs import (  # noqa: E402
    GATE1, CONTROL_GATE1, DUDECT, CONTROL_DUDECT, EXTRA, REPRO, SANITIZERS, GATED, REPORTED, LARGE)


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# ---------------------------------------------------------------------------
# Judging (pure functions: tested by --selftest without a GPU)

def judge_counters(rows, launches, gated_pairs=None):
    """rows: ncu raw rows in launch order; launches: the class of each launch
    (R rounds over the classes; `normal-repeat` counts as `normal`);
    gated_pairs: the (alias, metric) pairs judged, GATED unless given
    (scripts/ncu-counter-breakdown.py judges every sub-metric); REPORTED
    is tabled, never judged.
    identical     every launch the same: the gate's requirement;
    differs       repeatable within each class but not across: a leak (FAIL);
    noisy         varies between launches of the same inputs, so it depends on
                  timing (arrival order of asynchronous copies, L2 request
                  merging), not on inputs alone. With R >= 2 rounds it is
                  reported, and fails only if it separates classes: two classes
                  whose value ranges are disjoint by more than the largest
                  within-class range. With one round it fails (no evidence)."""
    if not rows or len(rows) != len(launches):
        return {"verdict": "ERROR", "why": f"{len(rows)} profiled launches for {len(launches)} launches", "metrics": {}}
    group = [("normal" if c == "normal-repeat" else c) for c in launches]
    classes = list(dict.fromkeys(group))
    rounds = len(group) // max(1, len(classes))
    table, gated, differing, noisy = {}, {}, [], []
    judged = GATED if gated_pairs is None else list(gated_pairs)
    for alias, metric in judged + REPORTED:
        if metric not in rows[0]:
            continue
        vals = [r[metric] for r in rows]
        per = {c: [v for g, v in zip(group, vals) if g == c] for c in classes}
        table[alias] = [per[c] for c in classes]
        if (alias, metric) in REPORTED:
            continue
        if len(set(map(str, vals))) == 1:
            gated[alias] = "identical"
            continue
        within = max((max(v) - min(v)) if all(isinstance(x, (int, float)) for x in v) else 0 for v in per.values())
        repeatable = all(len(set(map(str, v))) == 1 for v in per.values())
        if repeatable:
            gated[alias] = "differs"
        elif rounds < 2:
            gated[alias] = "noisy (one round: no verdict)"
        else:
            lo = {c: min(v) for c, v in per.items()}
            hi = {c: max(v) for c, v in per.items()}
            sep = [(a, b) for a in classes for b in classes if lo[b] - hi[a] > within]
            gated[alias] = "noisy, separates classes" if sep else "noisy (reported)"
        by_value = {}
        for c, v in per.items():
            by_value.setdefault("/".join(map(str, v)), []).append(c)
        entry = {"metric": alias, "state": gated[alias], "values": by_value, "within_class_range": within}
        (noisy if gated[alias] == "noisy (reported)" else differing).append(entry)
    verdict = "PASS" if gated and not differing else ("FAIL" if gated else "ERROR")
    return {"verdict": verdict, "metrics": gated, "table": table, "differing": differing, "noisy": noisy,
            "classes": classes, "rounds": rounds, "why": "" if gated else "no gated metric was collected"}


def counter_table_md(res):
    classes, table = res["classes"], res.get("table", {})
    head = "| metric | " + " | ".join(f"c{i}" for i in range(len(classes))) + " | verdict |"
    lines = [head, "|" + "---|" * (len(classes) + 2)]
    cell = lambda v: str(v[0]) if len(set(map(str, v))) == 1 else "/".join(map(str, v))
    for alias, vals in table.items():
        state = res["metrics"].get(alias, "reported")
        base = cell(vals[0])
        cells = [cell(v) if cell(v) == base or state == "reported" else f"**{cell(v)}**" for v in vals]
        lines.append(f"| {alias} | " + " | ".join(cells) + f" | {state} |")
    legend = ", ".join(f"c{i} = {c}" for i, c in enumerate(classes))
    return ("\n".join(lines) + f"\n\nClasses: {legend}. {res.get('rounds', 1)} launch(es) per class "
            "(values of the rounds joined by /; `normal` includes `normal-repeat`).\n")


def verdict_row(gate, config, expected, result, detail=""):
    return {"gate": gate, "config": config, "expected": expected, "result": result,
            "ok": result == expected or expected == "info", "detail": detail}


# ---------------------------------------------------------------------------
# Steps (each appends rows to ctx.rows and its record to ctx.report)

class Ctx:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.raw = Path(args.build_dir) / "validate-raw"
        self.out.mkdir(parents=True, exist_ok=True)
        self.raw.mkdir(parents=True, exist_ok=True)
        self.log = self.out / "validate.log"
        self.report = {"device": "", "steps": {}}
        self.rows = []
        self.exe = None
        self.scale = 0.01 if args.quick else 1.0

    def say(self, msg):
        print(msg, flush=True)
        with open(self.log, "a") as f:
            f.write(msg + "\n")


def gate1_runs(ctx):
    """(name, configuration, expected verdict): the shipped kernel's, then the control's."""
    runs = [(n, c, "PASS") for n, c in GATE1]
    if ctx.args.control:
        runs.append((CONTROL_GATE1, "--kernel leaky " + GATE1[0][1], "FAIL"))
    return [r for r in runs if re.search(ctx.args.only, r[0])]


def step_counters(ctx):
    known = ncu.available_metrics(ctx.raw / "ncu-query-metrics.txt")
    metrics, dropped = ncu.usable([m for _, m in GATED + REPORTED], known)
    ctx.say(f"gate 1 counters: {len(metrics)} metrics ({len(dropped)} unknown to this ncu: {', '.join(dropped) or '-'})")
    runs, recs = gate1_runs(ctx), []
    for name, cfg, expect in runs:
        csvp, jsonp = ctx.raw / f"ncu-{slug(name)}.csv", ctx.raw / f"classes-{slug(name)}.json"
        csvp.unlink(missing_ok=True)
        jsonp.unlink(missing_ok=True)
        rc, out = ncu.profile([ctx.exe, "classes", *cfg.split(), "--repeats", ctx.args.repeats, "--out", jsonp],
                              metrics, csvp, ctx.log)
        launches = json.loads(jsonp.read_text())["classes"] if jsonp.exists() else []
        rows = ncu.parse_raw_csv(csvp.read_text()) if csvp.exists() else []
        # One forward call may run two kernels (secret key lengths on Hopper:
        # the V padding scrub, then attention): each is judged on its own
        # launches; the attention kernel's table is the one printed.
        families = {}
        for r in rows:
            families.setdefault(ncu.kernel_family(r.get("Kernel Name")), []).append(r)
        names = [c["name"] for c in launches]
        res = judge_counters(families.pop("attention", []), names)
        res["other_kernels"] = {}
        for fam, fam_rows in families.items():
            sub = judge_counters(fam_rows, names)
            res["other_kernels"][fam] = {"verdict": sub["verdict"], "metrics": sub.get("metrics", {}),
                                         "differing": sub.get("differing", []), "why": sub.get("why", "")}
            if sub["verdict"] != "PASS" and res["verdict"] == "PASS":
                res["verdict"], res["why"] = sub["verdict"], f"{fam}: {sub.get('why') or 'counters differ'}"
        res.setdefault("classes", [])
        res.update(name=name, config=cfg, expected=expect, dropped=dropped,
                   unwritten=sum(c["unwritten"] for c in launches), exit=rc)
        if rc not in (0, 1) and res["verdict"] != "ERROR":
            res["verdict"], res["why"] = "ERROR", f"runner exit {rc}"
        if res["unwritten"]:
            res["verdict"], res["why"] = "FAIL", f"{res['unwritten']} output elements unwritten (G4)"
        detail = res.get("why") or (f"{sum(v == 'identical' for v in res['metrics'].values())} metrics identical over "
                                    f"{len(res['classes'])} classes x {res['rounds']}; noisy, reported: "
                                    + (", ".join(d["metric"] for d in res["noisy"]) or "none"))
        if res.get("differing"):
            detail = "differ: " + ", ".join(d["metric"] for d in res["differing"][:6])
        for fam, sub in res["other_kernels"].items():
            ident = sum(v == "identical" for v in sub["metrics"].values())
            detail += f"; {fam}: {sub['verdict']} ({ident} metrics identical)"
        ctx.rows.append(verdict_row("1 counters", name, expect, res["verdict"], detail))
        ctx.say(f"  {name}: {res['verdict']} ({detail})")
        recs.append(res)
    ctx.report["steps"]["counters"] = recs


def step_perpc(ctx):
    """Gate 1 per SASS instruction: the same classes, profiled with ncu's
    source counters; every instruction's counts must be identical in every
    launch outside the wait-retry blocks (tools/validate/per_pc.py)."""
    runs, recs = gate1_runs(ctx), []
    for name, cfg, expect in runs:
        stem, jsonp = ctx.raw / f"perpc-{slug(name)}", ctx.raw / f"classes-perpc-{slug(name)}.json"
        jsonp.unlink(missing_ok=True)
        rc, _ = ncu.run(["ncu", "--clock-control", "none", "--kernel-name", ncu.KERNEL_REGEX, "--section",
                         "SourceCounters", "-f", "-o", stem, ctx.exe, "classes", *cfg.split(), "--repeats",
                         ctx.args.repeats, "--out", jsonp], ctx.log, timeout=1200)
        names = [c["name"] for c in json.loads(jsonp.read_text())["classes"]] if jsonp.exists() else []
        rep = Path(str(stem) + ".ncu-rep")
        res = {"verdict": "ERROR", "why": f"ncu exit {rc}, no report"}
        if rep.exists():
            profiled, sass = per_pc.load(rep)
            rep.unlink()  # large; the judgement below keeps what matters
            families = {}
            for kname, counts in profiled:
                families.setdefault(ncu.kernel_family(kname), []).append((kname, counts))
            # No attention launch in the report is an error, not an empty pass.
            res = {"verdict": "PASS" if "attention" in families else "ERROR", "families": {},
                   "why": "" if "attention" in families else "no attention kernel in the ncu report"}
            for fam, items in families.items():
                kinds = {k for k, _ in items}
                if len(kinds) != 1:
                    sub = {"verdict": "ERROR", "why": f"{len(kinds)} different kernels in one family"}
                else:
                    text, base = sass[items[0][0]]
                    sub = per_pc.judge_per_pc([c for _, c in items], names, text, base)
                res["families"][fam] = sub
                if sub["verdict"] != "PASS" and res["verdict"] != "ERROR":
                    res["verdict"] = sub["verdict"]
        fams = res.get("families", {})
        detail = "; ".join(f"{fam}: {per_pc.describe(sub)}" for fam, sub in fams.items()) or res.get("why", "")
        res.update(name=name, config=cfg, expected=expect, exit=rc)
        if rc not in (0, 1) and res["verdict"] != "ERROR":
            res["verdict"], detail = "ERROR", f"runner exit {rc}; {detail}"
        ctx.rows.append(verdict_row("1 per-instruction", name, expect, res["verdict"], detail))
        ctx.say(f"  {name}: {res['verdict']} ({detail})")
        recs.append(res)
    ctx.report["steps"]["perpc"] = recs


def step_dudect(ctx, runs=None, key="dudect"):
    # The control right after the small runs (same configuration), the large
    # configuration last: it is the longest.
    runs = runs or DUDECT[:2] + (CONTROL_DUDECT if ctx.args.control else []) + DUDECT[2:]
    runs = [r for r in runs if re.search(ctx.args.only, r[0])]
    recs = []
    # Clocks and power once a second: DVFS is how data-dependent power reaches timing.
    dmon_path = ctx.raw / f"dmon-{key}.txt"
    dmon = ncu.background(["nvidia-smi", "dmon", "-s", "pc", "-o", "T", "-d", "1"], dmon_path)
    try:
        dudect_runs(ctx, runs, recs, key)
    finally:
        ncu.stop(dmon)
    ctx.report["steps"][key + "_clocks"] = ncu.dmon_summary(dmon_path)
    ctx.say(f"  clocks/power during {key}: {ctx.report['steps'][key + '_clocks']}")


def step_extra(ctx):
    step_dudect(ctx, EXTRA, "extra")


def calibration_words(rec):
    """How a dudect record's deadline was set: its calibration (dhp_validate --deadline-calib) or a given budget."""
    mode, us = rec.get("deadline_calib", "events"), float(rec.get("deadline_calib_max_us", 0))
    if mode == "none" or (mode == "events" and us == 0):
        return "given"
    what = "work under the deadline" if mode == "work" else "event-timed call"
    calls = rec.get("deadline_calib_calls")
    return f"slowest calibration {what} {us:.1f} us" + (f" of {calls} calls" if calls else "") + \
        (f", {rec['deadline_calib_starved']} starved batches" if rec.get("deadline_calib_starved") else "")


def dudect_runs(ctx, runs, recs, key):
    for name, cfg, test, n, warm, expect, extra in runs:
        if ctx.late():
            ctx.rows.append(verdict_row(f"1 timing ({test})", name, expect, "SKIPPED", "out of time (--deadline-s)"))
            continue
        n, warm = max(2000, int(n * ctx.scale)), max(500, int(warm * ctx.scale))
        jsonp = ctx.raw / f"dudect-{slug(name)}.json"
        jsonp.unlink(missing_ok=True)
        t0 = time.time()
        rc, out = ncu.run([ctx.exe, "dudect", *cfg.split(), "--test", test, "--measurements", n, "--warmup", warm,
                           "--calib", max(1000, n // 100), *extra.split(), "--out", jsonp], ctx.log, timeout=400)
        rec = json.loads(jsonp.read_text()) if jsonp.exists() and rc in (0, 1) else {"pass": None}
        result = "ERROR" if rec["pass"] is None else ("PASS" if rec["pass"] else "FAIL")
        # More than 1 overrun in 10^4 launches: the budget does not cover the work.
        if rec.get("deadline_overruns", 0) > n / 10_000:
            result = "FAIL"
        rec.update(name=name, expected=expect, result=result, seconds=round(time.time() - t0, 1), flags=extra)
        fin = rec.get("curve", [{}])[-1]
        if "classes" in rec:
            detail = (f"n={fin.get('n')} max|t|={float(fin.get('max_abs_t', 0)):.2f} ({fin.get('worst')}), "
                      f"median fixed/random {rec['classes'][0]['median_us']:.2f}/{rec['classes'][1]['median_us']:.2f} us, "
                      f"mean fixed - random {(rec['classes'][0]['mean_us'] - rec['classes'][1]['mean_us']) * 1000:+.2f} ns"
                      + (f", {rec['host_starved']} host-starved batches" if rec.get("host_starved") else "")
                      + (f", deadline {rec['deadline_ns'] / 1000:.1f} us ({calibration_words(rec)}), "
                         f"{rec['deadline_overruns']} overruns "
                         f"(fixed/random {'/'.join(map(str, rec.get('deadline_overruns_by_class', [])))}), "
                         f"GPU clock tick {float(rec.get('timer_tick_ns', 0)):.0f} ns"
                         if rec.get("deadline_ns") else "")
                      + "".join(f", probe {k} fixed - random {float(v['fixed']) - float(v['random']):+.3f} "
                                f"(t {float(v['t']):.2f})" for k, v in (rec.get("deadline_probe") or {}).items())
                      + (", graph replay" if rec.get("graph") else "") + (", A/A" if rec.get("null_run") else "")
                      + (f", jitter taken out: fixed - random {float(rec['jitter_out']['diff_ns']):+.2f} ns "
                         f"(t {float(rec['jitter_out']['t']):.2f}), worst phase bin |t| "
                         f"{max([float(p['max_abs_t']) for p in rec['jitter_out'].get('periods', [])] or [0]):.1f}"
                         if rec.get("jitter_out") else ""))
        else:
            detail = (out.strip().splitlines() or [f"exit {rc}"])[-1][:160]
        ctx.rows.append(verdict_row(f"1 timing ({test})", name, expect, result, detail))
        ctx.say(f"  dudect {name}: {result} {detail} [{rec['seconds']} s]")
        recs.append(rec)
        ctx.report["steps"][key] = recs
        ctx.checkpoint()


def step_repro(ctx):
    recs = []
    launches = max(20, int(1000 * ctx.scale)) if ctx.args.quick else 1000
    for name, cfg in [r for r in REPRO if re.search(ctx.args.only, r[0])]:
        jsonp = ctx.raw / f"repro-{slug(name)}.json"
        jsonp.unlink(missing_ok=True)
        rc, out = ncu.run([ctx.exe, "repro", *cfg.split(), "--launches", launches, "--out", jsonp], ctx.log, timeout=300)
        rec = json.loads(jsonp.read_text()) if jsonp.exists() and rc in (0, 1) else {"pass": None}
        result = "ERROR" if rec["pass"] is None else ("PASS" if rec["pass"] else "FAIL")
        rec.update(name=name, result=result)
        bad = [c for c in rec.get("batch_cases", []) if c["differing_o"] or c["differing_lse"]]
        detail = (f"{rec.get('launches')} launches, {rec.get('mismatched_launches')} differ; "
                  f"{len(rec.get('batch_cases', [])) - len(bad)}/{len(rec.get('batch_cases', []))} batch placements identical")
        ctx.rows.append(verdict_row("3 repro+batch", name, "PASS", result, detail))
        ctx.say(f"  repro {name}: {result} ({detail})")
        recs.append(rec)
    ctx.report["steps"]["repro"] = recs


def step_sanitize(ctx):
    recs = []
    for tool in SANITIZERS:
        logp = ctx.raw / f"sanitize-{tool}.txt"
        rc, out = ncu.run(["compute-sanitizer", "--tool", tool, "--error-exitcode", "99", ctx.exe, "sanitize"],
                          None, timeout=400)
        logp.write_text(out)
        m = re.search(r"(ERROR|RACECHECK) SUMMARY: (\d+) (error|hazard)", out)
        errors = int(m.group(2)) if m else None
        result = "PASS" if rc == 0 and errors == 0 else ("ERROR" if errors is None else "FAIL")
        detail = m.group(0) if m else f"exit {rc}, no summary line"
        ctx.rows.append(verdict_row("sanitizer", tool, "PASS", result, detail))
        ctx.say(f"  compute-sanitizer {tool}: {result} ({detail})")
        recs.append({"tool": tool, "result": result, "exit": rc, "summary": detail})
    ctx.report["steps"]["sanitize"] = recs


def step_audit(ctx):
    """Gate 2 on the control: only when tools/audit provides a dhp-audit target."""
    if not (ROOT / "tools" / "audit" / "CMakeLists.txt").exists():
        ctx.say("  gate 2 (dhp-audit): not available in this tree yet; recorded by the audit work (issue 3)")
        ctx.report["steps"]["audit"] = {"result": "not available"}
        return
    ncu.run(["cmake", "--build", ctx.args.build_dir, "--target", "dhp-audit"], ctx.log)
    exe = next(iter(Path(ctx.args.build_dir).rglob("dhp-audit")), None)
    obj = next(iter(Path(ctx.args.build_dir).rglob("leaky_control.cu.o")), None)
    recs = {}
    # The shipped library's audit is gate 2 itself (issue 3); here only the
    # control, which must be flagged.
    for name, target, expect in (("control", obj, "FAIL"),):
        if exe is None or target is None:
            recs[name] = {"result": "not available", "why": "dhp-audit or the target binary is missing"}
            ctx.say(f"  dhp-audit {name}: not available (no dhp-audit target in this tree; recorded by the audit work, issue 3)")
            continue
        rc, out = ncu.run([exe, "--json", target], ctx.log, timeout=300)
        result = {0: "PASS", 1: "FAIL"}.get(rc, "ERROR")
        (ctx.raw / f"audit-{slug(name)}.json").write_text(out)
        recs[name] = {"result": result, "exit": rc}
        ctx.rows.append(verdict_row("2 SASS audit", name, expect, result, f"dhp-audit exit {rc}"))
        ctx.say(f"  dhp-audit {name}: {result} (exit {rc})")
    ctx.report["steps"]["audit"] = recs


def step_profile(ctx):
    rec = ncu.perf_profile(ctx.exe, LARGE, ctx.raw / "ncu-profile-large.csv", ctx.log)
    (ctx.out / "ncu-profile.txt").write_text(ncu.perf_text(LARGE, rec))
    ctx.report["steps"]["profile"] = {"config": LARGE, "metrics": rec}
    ctx.say(ncu.perf_text(LARGE, rec))


STEPS = {"counters": step_counters, "perpc": step_perpc, "repro": step_repro, "sanitize": step_sanitize,
         "dudect": step_dudect, "extra": step_extra, "audit": step_audit, "profile": step_profile}


# ---------------------------------------------------------------------------
# Report

def summary_md(ctx):
    r, out = ctx.report, []
    out.append(f"# dhp-validate report\n\ndevice: {r['device']}\n")
    out.append("## Verdicts\n\n| gate | configuration | expected | result | ok | detail |\n|---|---|---|---|---|---|")
    for v in ctx.rows:
        out.append(f"| {v['gate']} | {v['config']} | {v['expected']} | {v['result']} | {'yes' if v['ok'] else '**NO**'} | {v['detail']} |")
    for res in r["steps"].get("counters", []):
        out.append(f"\n## Gate 1 counters: {res['name']} — {res['verdict']}\n\n`{res['config']}`\n")
        if res.get("table"):
            out.append(counter_table_md(res))
        for d in res.get("differing", []):
            out.append(f"- {d['metric']} ({d['state']}): " + "; ".join(f"{v}: {', '.join(c)}" for v, c in d["values"].items()))
    for res in r["steps"].get("perpc", []):
        out.append(f"\n## Gate 1 per instruction: {res['name']} — {res['verdict']}\n\n`{res['config']}`\n")
        for fam, sub in res.get("families", {}).items():
            out.append(f"- {fam}: {sub['verdict']}: {per_pc.describe(sub)}; guards {sub.get('guards')}, "
                       f"rejected blocks {sub.get('rejected_blocks')}, inst outside retry blocks {sub.get('inst_outside_retry')}")
            for f in sub.get("findings", [])[:12]:
                out.append(f"  - +0x{f['offset']:x} `{f['sass']}` {f['metric']} ({f['state']}): "
                           + "; ".join(f"{c}: {'/'.join(map(str, v))}" for c, v in f["values"].items()))
    timing = r["steps"].get("dudect", []) + r["steps"].get("extra", [])
    if timing:
        out.append("\n## Timing leakage test (dudect)\n\n| run | configuration | test | n | max abs t | worst test | t raw | t 2nd order | median fixed / random (us) | result |\n|---|---|---|---|---|---|---|---|---|---|")
        for d in timing:
            if "curve" not in d:
                out.append(f"| {d['name']} | | | | | | | | | {d['result']} |")
                continue
            f = d["curve"][-1]
            out.append(f"| {d['name']} | {d['problem']} {d.get('flags', '')} | {d['test']} | {f['n']} | {float(f['max_abs_t']):.2f} | {f['worst']} | "
                       f"{float(f['t_raw']):.2f} | {float(f['t_second']):.2f} | {d['classes'][0]['median_us']:.3f} / "
                       f"{d['classes'][1]['median_us']:.3f} | {d['result']} |")
    if r["steps"].get("repro"):
        out.append("\n## Gate 3: reproducibility and batch invariance\n\n| configuration | launches | differing launches | batch placements (B, position, neighbours: differing o / lse) | result |\n|---|---|---|---|---|")
        for d in r["steps"]["repro"]:
            cases = "; ".join(f"{c['batch']},{c['position']},{c['neighbours']}: {c['differing_o']}/{c['differing_lse']}"
                              for c in d.get("batch_cases", []))
            out.append(f"| {d.get('problem', d['name'])} | {d.get('launches')} | {d.get('mismatched_launches')} | {cases} | {d['result']} |")
    if r["steps"].get("sanitize"):
        out.append("\n## compute-sanitizer (`dhp_validate sanitize`: its small configurations)\n\n| tool | summary | result |\n|---|---|---|")
        for d in r["steps"]["sanitize"]:
            out.append(f"| {d['tool']} | {d['summary']} | {d['result']} |")
    return "\n".join(out) + "\n"


def plots(ctx):
    runs = [d for d in ctx.report["steps"].get("dudect", []) + ctx.report["steps"].get("extra", []) if "curve" in d]
    if not runs:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        ctx.say("matplotlib missing: no plots")
        return
    cols = min(3, len(runs))
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.4 * rows), squeeze=False)
    for ax, d in zip(axes.flat, runs):
        lo, hi = d["hist_range_us"]
        bins = len(d["classes"][0]["hist"])
        edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
        for c in d["classes"]:
            ax.stairs(c["hist"], edges, label=f"{c['name']} (n={c['n']})")
        ax.set_title(f"{d['name']}: {d['result']}", fontsize=9)
        ax.set_xlabel("device time per launch (us)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(ctx.out / "timing-hist.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for d in runs:
        ns = [c["n"] for c in d["curve"]]
        ts = [max(float(c["max_abs_t"]), 1e-3) if c["max_abs_t"] not in ("inf", "nan") else 1e6 for c in d["curve"]]
        ax.plot(ns, ts, marker="o", ms=3, label=d["name"])
    ax.axhline(4.5, color="k", ls="--", lw=1, label="|t| = 4.5")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measurements")
    ax.set_ylabel("max |t| (raw, 100 crops, 2nd order)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(ctx.out / "t-vs-n.png", dpi=110)
    plt.close(fig)


def final_table(rows):
    w = [max(len(str(r[k])) for r in rows + [{"gate": "gate", "config": "configuration", "expected": "expected", "result": "result"}])
         for k in ("gate", "config", "expected", "result")]
    line = lambda a, b, c, d, e: f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d:<{w[3]}}  {e}"
    text = [line("gate", "configuration", "expected", "result", "ok")]
    text += [line(r["gate"], r["config"], r["expected"], r["result"], "yes" if r["ok"] else "NO") for r in rows]
    return "\n".join(text)


def write_outputs(ctx):
    ctx.report["verdicts"] = ctx.rows
    ctx.report["all_ok"] = bool(ctx.rows) and all(r["ok"] for r in ctx.rows)
    (ctx.out / "validation.json").write_text(json.dumps(ctx.report, indent=1, default=str))
    (ctx.out / "summary.md").write_text(summary_md(ctx))
    with tarfile.open(ctx.out / "raw.tar.gz", "w:gz") as t:
        t.add(ctx.raw, arcname="raw")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="dhp-validate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or "validate-out")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "validate-gpu"))
    ap.add_argument("--steps", default="counters,perpc,repro,sanitize,dudect,audit,profile",
                    help="comma-separated subset of: " + ",".join(STEPS))
    ap.add_argument("--repeats", type=int, default=3, help="launches per input class under ncu (gate 1)")
    ap.add_argument("--only", default="", help="regex: run only the gate-1, timing and gate-3 runs whose name matches")
    ap.add_argument("--no-control", dest="control", action="store_false", help="skip the leaky-control runs")
    ap.add_argument("--quick", action="store_true", help="1/100 of the timing measurements (a dry run, not a verdict)")
    ap.add_argument("--deadline-s", type=float, default=1e9,
                    help="start no further run after this many seconds (fits a time-limited GPU lease)")
    ap.add_argument("--selftest", action="store_true", help="check the judging logic on synthetic data (no GPU)")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    ctx = Ctx(args)
    ctx.checkpoint = lambda: write_outputs(ctx)
    t0 = time.time()
    rc, smi = ncu.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader"])
    ctx.report["device"] = smi.strip() if rc == 0 else "no nvidia-smi"
    ctx.say(f"device: {ctx.report['device']}")
    ctx.exe = ncu.build(args.build_dir, ctx.log, leaky=args.control)
    ctx.say(f"build: {'ok' if ctx.exe else 'FAILED (see validate.log)'} [{time.time() - t0:.0f} s]")
    if ctx.exe is None:
        write_outputs(ctx)
        return 2
    ctx.late = lambda: time.time() - t0 > args.deadline_s
    for name in args.steps.split(","):
        t = time.time()
        if ctx.late():
            ctx.rows.append(verdict_row(name, "-", "PASS", "SKIPPED", "out of time (--deadline-s)"))
            continue
        ctx.say(f"== {name}")
        try:
            STEPS[name](ctx)
        except Exception as e:  # a broken step must not hide the others' results
            ctx.rows.append(verdict_row(name, "-", "PASS", "ERROR", repr(e)[:200]))
            ctx.say(f"  {name}: ERROR {e!r}")
        ctx.say(f"   [{name}: {time.time() - t:.0f} s, total {time.time() - t0:.0f} s]")
        write_outputs(ctx)
    plots(ctx)
    write_outputs(ctx)
    ctx.say("\n== summary (expected: shipped kernel PASS, leaky control FAIL)\n" + final_table(ctx.rows))
    ctx.say(f"overall: {'ALL GATES AS EXPECTED' if ctx.report['all_ok'] else 'NOT AS EXPECTED'} [{time.time() - t0:.0f} s]")
    return 0 if ctx.report["all_ok"] else 1


# ---------------------------------------------------------------------------

def selftest():
    """The judging logic on synthetic data: a leaky counter table must fail,
    a clean one pass, a non-repeatable counter must not pass."""
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok    " if ok else "FAIL  ") + what)
        failed += 0 if ok else 1

    inst, br = GATED[0][1], GATED[6][1]
    header = '"ID","Process ID","Kernel Name","' + inst + '","' + br + '","' + REPORTED[0][1] + '"'
    units = '"","","","inst","","nsecond"'
    def csv_text(values):
        rows = [f'"{i}","77","void attention_forward_sm80<T>(Args)","{a:,}","{b}","{1000 + i}"' for i, (a, b) in enumerate(values)]
        return "==PROF== Connected\n" + "\n".join([header, units] + rows) + "\n"
    classes = ["normal", "zeros", "len-0", "normal-repeat"]
    rows = ncu.parse_raw_csv(csv_text([(1234567, 8)] * 4))
    check(len(rows) == 4 and rows[0][inst] == 1234567, "raw CSV parsed (units row skipped, thousands separators)")
    res = judge_counters(rows, classes, None)
    check(res["verdict"] == "PASS" and "duration_ns" in res["table"], "identical counters pass; duration reported only")
    res = judge_counters(ncu.parse_raw_csv(csv_text([(1234567, 8), (1234567, 8), (1000000, 7), (1234567, 8)])), classes, None)
    check(res["verdict"] == "FAIL" and {d["metric"] for d in res["differing"]} == {"inst", "branch_targets"},
          "a class with fewer instructions and branches (the leaky control's signature) fails")
    check("len-0" in res["differing"][0]["values"]["1000000"], "the differing class is named")
    res = judge_counters(ncu.parse_raw_csv(csv_text([(5, 8), (5, 8), (5, 8), (6, 8)])), classes, None)
    check(res["verdict"] == "FAIL" and res["differing"][0]["state"].startswith("noisy"), "a non-repeatable counter (one round) is noisy, not a pass")
    res = judge_counters(rows[:3], classes, None)
    check(res["verdict"] == "ERROR", "a missing launch is an error")
    three = classes[:3] * 3
    res = judge_counters(ncu.parse_raw_csv(csv_text([(5, 8), (6, 8), (5, 8), (6, 8), (5, 8), (6, 8), (5, 8), (5, 8), (6, 8)])), three)
    check(res["verdict"] == "PASS" and res["noisy"][0]["metric"] == "inst", "with 3 rounds, overlapping noise is reported, not failed")
    res = judge_counters(ncu.parse_raw_csv(csv_text([(5, 8), (6, 8), (50, 8), (6, 8), (5, 8), (51, 8), (5, 8), (6, 8), (50, 8)])), three)
    check(res["verdict"] == "FAIL" and res["metrics"]["inst"] == "noisy, separates classes", "noise does not hide a class that stands apart")
    check("**" in counter_table_md(dict(judge_counters(ncu.parse_raw_csv(csv_text([(1, 1), (2, 1), (1, 1), (1, 1)])), classes, None),
                                         classes=classes)), "the table marks differing cells")
    check(ncu.usable(["a__b.sum", "launch__grid_size", "c__d.sum"], {"a__b"}) == (["a__b.sum", "launch__grid_size"], ["c__d.sum"]),
          "metrics unknown to ncu are dropped and listed")
    per_pc.selftest(check)
    print(f"report selftest: {'PASS' if not failed else 'FAIL'}")
    return 1 if failed else 0
