"""Gate 1 per SASS instruction: Nsight Compute's source counters of every
profiled launch, compared instruction by instruction across input classes.

Why per instruction. The kernel-wide totals of gate 1 can hide two
differences that cancel, and some totals (instructions, branches) vary
between launches of identical inputs: a warp that waits on an mbarrier
retries its try-wait a timing-dependent number of times. Here every SASS
instruction's counts must be identical in every launch, except inside the
wait-retry blocks, which are found in the SASS itself and must consist of
nothing but the retry (see RETRY_OPS, ALLOC_OPS); their counts are reported.

What a retry block is (ptxas's code for `mbarrier.try_wait` in a loop):

    SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [bar], phase   <- in line, counted
    @!P0 BRA retry                                     <- guard: only its
                                                          predicate-true and
                                                          branch counts vary
    ...
  retry:
    [IMAD.U32 / MOV: the barrier address again]
    SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [bar], phase
    @!P0 NANOSLEEP.SYNCS hint
    @!P0 SYNCS.PHASECHK.TRANS64 P0, [bar], phase
    @!P0 BRA retry
    BRA back

Whether such a loop turns depends on when a copy lands or another warp
arrives, i.e. on timing, which the dudect test judges; its exit predicate is
a barrier phase, which dhp-audit (gate 2) already requires to be public.
The parsing and judging functions are pure (tested by selftest(); no GPU);
load() needs ncu's Python module `ncu_report` (extras/python of Nsight Compute).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# (alias, source-level metric of the SourceCounters section).
PER_PC = [
    ("inst", "inst_executed"),
    ("thread_inst", "thread_inst_executed"),
    ("thread_inst_pred_on", "thread_inst_executed_true"),
    ("branch_divergent", "smsp__branch_targets_threads_divergent"),
    ("l1_tag_req_global", "memory_l1_tag_requests_global"),
    ("l2_sectors_global", "memory_l2_theoretical_sectors_global"),
    ("smem_wavefronts", "memory_l1_wavefronts_shared"),
]
# Of the guard branch in front of a retry block only these may vary (it runs
# every time; whether it is taken is the wait's outcome).
GUARD_VARIES = {"thread_inst_pred_on", "branch_divergent"}
# How far behind its try-wait the guard branch may lie (instructions).
GUARD_WINDOW = 128
# Control flow (opcode before its first '.'): none may lie between a
# try-wait and its guard.
# (BSSY, which only records a reconvergence point, is not among them.)
CONTROL_OPS = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSYNC", "BREAK", "BPT", "KILL", "WARPSYNC", "YIELD"}
JUMP_OPS = {"BRA", "BRX", "JMP", "JMX", "CALL"}
# Opcodes a retry block may contain; anything else and the block is not exempt.
RETRY_OPS = {"SYNCS.PHASECHK.TRANS64.TRYWAIT", "SYNCS.PHASECHK.TRANS64", "NANOSLEEP.SYNCS", "BRA", "IMAD.U32",
             "MOV", "IMAD.MOV.U32"}
# `setmaxnreg.inc` is a loop too: it retries until the warps that gave their
# registers back (setmaxnreg.dec) have done so -- timing again, not data.
ALLOC_OPS = {"WARPSYNC.ALL", "USETMAXREG.TRY_ALLOC.CTAPOOL", "PLOP3.LUT", "BRA"}
# The counter wait of V's copy beside the attention (producer.cuh,
# wait_pair_copied): an acquire load of the counter, the L1 invalidation that
# acquire brings, a compare into the loop's predicate, and the branch back;
# ptxas adds a YIELD and reloads the target from the constant bank (ULDC).
COUNTER_OPS = {"CCTL.IVALL", "YIELD", "ULDC"}
_PRED = re.compile(r"^@(!?)(U?P[T0-9]+)\s+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def parse_sass(sass_by_off):
    """{offset: SASS text} -> list of (offset, negated, predicate, opcode, operands) in address order."""
    out = []
    for off in sorted(sass_by_off):
        text = str(sass_by_off[off]).strip().rstrip(";").strip()
        m = _PRED.match(text)
        neg, pred = (m.group(1) == "!", m.group(2)) if m else (False, "")
        body = text[m.end():] if m else text
        opcode, _, operands = body.partition(" ")
        out.append((off, neg, pred, opcode, operands.strip()))
    return out


def branch_target(operands, base):
    """The offset a BRA jumps to (ncu prints absolute addresses), or None."""
    m = _HEX.search(operands)
    return int(m.group(0), 16) - base if m else None


def retry_op(inst, flags=frozenset()):
    """An instruction a retry loop may contain: RETRY_OPS, with IMAD only in
    its move form (IMAD.U32 / IMAD.MOV.U32 / IMAD.MOV d, RZ, RZ, x: the
    barrier address or phase again), never a real multiply-add, nor
    IMAD.MOV's negated form (d = -x). Unpredicated, or predicated on one of
    the wait's own flags (`flags`): a move under another predicate would
    have its predicate-true count exempt from the comparison."""
    op, operands = inst[3], [o.strip() for o in inst[4].split(",")]
    if inst[2] and inst[2] != "PT" and inst[2] not in flags:
        return False
    if op in ("IMAD.U32", "IMAD.MOV.U32", "IMAD.MOV"):
        return len(operands) == 4 and operands[1] == "RZ" and operands[2] == "RZ" and \
            not operands[3].startswith("-")
    return op in RETRY_OPS


def counter_loop(body, bpred, bneg):
    """A counter wait: nothing but one unpredicated LDG.E.STRONG.GPU into R,
    COUNTER_OPS, one unpredicated ISETP after the load that compares R with a
    constant (an immediate, a constant-bank operand, or a uniform register
    loaded from the constant bank in the loop) and writes the loop's
    predicate alone (no other predicate source), and the closing @!P BRA
    (the only branch). Nothing in it writes what the load's address is
    formed from, the load included, so every turn reads the same counter and
    compares it with the same public bound."""
    loads = [i for i, b in enumerate(body) if b[3] == "LDG.E.STRONG.GPU"]
    sets = [i for i, b in enumerate(body) if b[3].startswith("ISETP.")]
    if len(loads) != 1 or len(sets) != 1 or not bneg or loads[0] > sets[0]:
        return False
    load, cmp = body[loads[0]], body[sets[0]]
    if load[2] or cmp[2]:
        return False
    dest, address = (o.strip() for o in load[4].split(",", 1))
    ops = [o.strip() for o in cmp[4].split(",")]
    # ISETP.cc P, PT, a, b, PT: one destination, both sources, a plain PT.
    if len(ops) != 5 or ops[0] != bpred or ops[1] != "PT" or ops[4] != "PT" or dest not in ops[2:4]:
        return False
    other = ops[3] if ops[2] == dest else ops[2]
    uldc = {o[4].split(",")[0].strip(): o[4] for o in body if o[3].startswith("ULDC")}
    constant = other.startswith("0x") or other.lstrip("-").isdigit() or other.startswith("c[") or \
        (other in uldc and "c[" in uldc[other])
    if not constant:
        return False
    # The address's registers, both halves of a 64-bit pair (R4.64: R4, R5);
    # the load (32 bits: its opcode has no width) and every ULDC must write
    # none of them.
    regs = set()
    for prefix, num, wide in re.findall(r"(U?R)(\d+)(\.64)?", address):
        regs.add(f"{prefix}{num}")
        if wide:
            regs.add(f"{prefix}{int(num) + 1}")
    if regs & ({dest} | set(uldc)):
        return False
    rest = [x for i, x in enumerate(body[:-1]) if i not in (loads[0], sets[0])]
    return all(x[3] in COUNTER_OPS and not x[2] for x in rest) and body[-1][3] == "BRA" and \
        sum(x[3] == "BRA" for x in body) == 1


def retry_blocks(insts, base=0):
    """Finds the wait-retry blocks. Returns (exempt offsets, guard offsets,
    list of blocks as (start, end) offsets, list of rejected blocks with the
    opcode that disqualified them)."""
    index = {off: i for i, (off, *_rest) in enumerate(insts)}
    branch_targets = {branch_target(o[4], base) for o in insts if o[3].split(".")[0] in JUMP_OPS}
    exempt, guards, blocks, rejected = set(), set(), [], []
    for i, (off, _neg, _pred, op, operands) in enumerate(insts):
        if op != "SYNCS.PHASECHK.TRANS64.TRYWAIT":
            continue
        flag = operands.split(",")[0].strip()
        # The guard follows the try-wait, maybe far behind it: ptxas issues
        # the (non-blocking) try-wait early and schedules independent work
        # between (the one-GEMM D = 256 kernel's V wait sits ahead of ~40
        # softmax instructions). The work between runs once whatever the
        # wait's outcome, and is compared as usual. The scan stops at
        # anything that could make the branch found not this wait's guard:
        # any control-flow instruction but a plain BRA, another try-wait,
        # any instruction that names the flag among its operands (a write
        # in any destination position, or a read: conservative), and any
        # instruction that another branch jumps to (the flag could arrive
        # there from elsewhere).
        for j in range(i + 1, min(i + GUARD_WINDOW + 1, len(insts))):
            goff, gneg, gpred, gop, gops = insts[j]
            if goff in branch_targets:
                break
            if gop != "BRA":
                tokens = {t.strip() for t in gops.replace("!", "").split(",")}
                if gop.split(".")[0] in CONTROL_OPS or gop == "SYNCS.PHASECHK.TRANS64.TRYWAIT" or flag in tokens:
                    break
                continue
            if not gneg or gpred != flag:
                break
            start = branch_target(gops, base)
            if start not in index or start <= goff:
                break  # an in-line check's guard jumps forward (a retry loop's own branch turns back)
            k, body = index[start], []
            while k < len(insts):
                body.append(insts[k])
                if insts[k][3] == "BRA" and not insts[k][2]:
                    break  # the unconditional jump back ends the block
                k += 1
            # The block's own try-wait may set another flag than the in-line one.
            own = {b[4].split(",")[0].strip() for b in body if b[3] == "SYNCS.PHASECHK.TRANS64.TRYWAIT"}
            bad = [b[3] for b in body if not retry_op(b, own | {flag})]
            has_wait = any(b[3] == "SYNCS.PHASECHK.TRANS64.TRYWAIT" for b in body)
            back = insts[j + 1][0] if j + 1 < len(insts) else None  # where the guard falls through
            closed = bool(body) and body[-1][3] == "BRA" and not body[-1][2] and \
                branch_target(body[-1][4], base) == back
            # Inside, a branch may only turn back to the block's start.
            loops_only = all(branch_target(b[4], base) == start for b in body[:-1] if b[3] == "BRA")
            if bad or not has_wait or not closed or not loops_only:
                why = bad[0] if bad else ("no TRYWAIT" if not has_wait else
                                          "does not return behind its guard" if not closed else "branches elsewhere")
                rejected.append((start, why))
                break
            if (start, body[-1][0]) not in blocks:
                blocks.append((start, body[-1][0]))
            exempt.update(b[0] for b in body)
            guards.add(goff)
            break
    for j, (boff, bneg, bpred, op, operands) in enumerate(insts):
        start = branch_target(operands, base) if op == "BRA" and bpred else None
        if start is None or start not in index or start >= boff:
            continue
        body = insts[index[start]:j + 1]
        if all(b[3] in ALLOC_OPS for b in body) and any(b[3].startswith("USETMAXREG") for b in body) and \
                sum(b[3] == "BRA" for b in body) == 1:
            blocks.append((start, boff))
            exempt.update(b[0] for b in body)
            continue
        # The in-line form of the same try-wait loop (ptxas sometimes emits
        # it instead of the out-of-line block): [MOV] TRYWAIT P, ...; @!P
        # NANOSLEEP; @!P PHASECHK P; @!P BRA back to the start. Nothing but
        # retry opcodes, one branch (this one), taken on the wait's own flag.
        # Entered by falling through: no other branch jumps to its start or
        # into its body (an out-of-line block is entered from its guard and
        # judged above).
        targets = (branch_target(o[4], base) for o in insts if o[3] == "BRA" and o[0] != boff)
        entered_elsewhere = any(t is not None and start <= t <= boff for t in targets)
        waits = [b for b in body if b[3] == "SYNCS.PHASECHK.TRANS64.TRYWAIT"]
        only_retry = all(retry_op(b, {bpred}) for b in body) and sum(b[3] == "BRA" for b in body) == 1
        on_own_flag = all(bpred == w[4].split(",")[0].strip() for w in waits)
        if waits and start not in exempt and not entered_elsewhere and bneg and only_retry and on_own_flag:
            blocks.append((start, boff))
            exempt.update(b[0] for b in body)
        elif not waits and start not in exempt and not entered_elsewhere and counter_loop(body, bpred, bneg):
            blocks.append((start, boff))
            exempt.update(b[0] for b in body)
    return exempt, guards - exempt, blocks, rejected


def judge_per_pc(launches, classes, sass_by_off=None, base=0):
    """launches: per launch {offset: {alias: count}} (one kernel, launch
    order); classes: the input class of each launch. Every (offset, metric)
    outside the retry blocks must be identical in all launches."""
    if not launches or len(launches) != len(classes):
        return {"verdict": "ERROR", "why": f"{len(launches)} profiled launches for {len(classes)} classes"}
    group = [("normal" if c == "normal-repeat" else c) for c in classes]
    insts = parse_sass(sass_by_off or {})
    exempt, guards, blocks, rejected = retry_blocks(insts, base)
    offsets = sorted(set().union(*launches))
    aliases = [a for a, _ in PER_PC if any(a in v for l in launches for v in l.values())]
    findings, retry_inst, compared = [], [0] * len(launches), 0
    for off in offsets:
        for alias in aliases:
            vals = [l.get(off, {}).get(alias, 0) for l in launches]
            if off in exempt:
                if alias == "inst":
                    retry_inst = [r + v for r, v in zip(retry_inst, vals)]
                continue
            if off in guards and alias in GUARD_VARIES:
                continue
            compared += 1
            if len(set(vals)) == 1:
                continue
            per = {}
            for g, v in zip(group, vals):
                per.setdefault(g, []).append(v)
            repeatable = all(len(set(v)) == 1 for v in per.values())
            findings.append({"offset": off, "metric": alias, "sass": str((sass_by_off or {}).get(off, "?")),
                             "state": "differs between classes" if repeatable else "varies between identical launches",
                             "values": {c: v for c, v in per.items()}})
    outside = [sum(l.get(o, {}).get("inst", 0) for o in offsets if o not in exempt) for l in launches]
    verdict = "FAIL" if findings else ("PASS" if compared else "ERROR")
    return {"verdict": verdict, "why": "" if compared else "no per-instruction counts collected",
            "instructions": len(offsets), "comparisons": compared, "metrics": aliases,
            "retry_blocks": len(blocks), "exempt_instructions": len(exempt), "guards": len(guards),
            "rejected_blocks": rejected, "retry_inst_range": [min(retry_inst), max(retry_inst)],
            "inst_outside_retry": sorted(set(outside)), "findings": findings[:40], "n_findings": len(findings)}


def describe(res):
    if res["verdict"] == "ERROR":
        return res.get("why", "error")
    head = (f"{res['instructions']} instructions x {len(res['metrics'])} counters identical outside "
            f"{res['retry_blocks']} wait-retry blocks ({res['exempt_instructions']} instructions; their "
            f"inst {res['retry_inst_range'][0]}-{res['retry_inst_range'][1]})")
    if res["verdict"] == "PASS":
        return head
    f = res["findings"][0]
    return (f"{res['n_findings']} (instruction, counter) pairs differ, e.g. +0x{f['offset']:x} {f['sass'][:48]!r} "
            f"{f['metric']}: {f['state']}")


# ---------------------------------------------------------------------------
# Reading an ncu report (on the GPU machine)

def ncu_report_module():
    """Imports ncu_report from the Nsight Compute next to `ncu` on PATH."""
    ncu = shutil.which("ncu")
    roots = [Path(ncu).resolve().parent] if ncu else []
    roots += sorted(Path("/opt/nvidia/nsight-compute").glob("*")) + sorted(Path("/usr/local/cuda").glob("nsight-compute*"))
    for r in roots:
        for cand in (r / "extras" / "python", r.parent / "extras" / "python"):
            if (cand / "ncu_report.py").exists():
                sys.path.insert(0, str(cand))
                import ncu_report  # noqa: E402
                return ncu_report
    raise RuntimeError("ncu_report (Nsight Compute extras/python) not found")


def load(report_path):
    """Per profiled launch: (kernel name, {offset: {alias: count}}), and per
    kernel name (the SASS {offset: text} of one of its launches, its base
    address: ncu prints branch targets as absolute addresses)."""
    mod = ncu_report_module()
    ctx = mod.load_report(str(report_path))
    launches, sass = [], {}
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            act = rng.action_by_idx(ai)
            name = act.name()
            counts = {}
            for alias, metric in PER_PC:
                m = act.metric_by_name(metric)
                if m is None or not m.has_correlation_ids():
                    continue
                ids = m.correlation_ids()
                for i in range(m.num_instances()):
                    counts.setdefault(ids.as_uint64(i), {})[alias] = m.as_uint64(i)
            base = min(counts) if counts else 0
            launches.append((name, {pc - base: v for pc, v in counts.items()}))
            if name not in sass and counts:
                sass[name] = ({pc - base: act.sass_by_pc(pc) for pc in counts}, base)
    return launches, sass


# ---------------------------------------------------------------------------

def selftest(check):
    """Pure-function checks (no GPU), reported through check(ok, what)."""
    base = 0x7000
    text = {
        0x00: "LDC R1, c[0x0][0x28]",
        0x10: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R5+UR8+0x30000], R0",
        0x20: "@!P0 BRA 0x7060",
        0x30: "FADD R2, R2, R3",
        0x40: "@!P5 BRA 0x7030",
        0x50: "EXIT",
        0x60: "IMAD.U32 R3, RZ, RZ, UR8",
        0x70: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ+0x30000], R0",
        0x80: "@!P0 NANOSLEEP.SYNCS 0x989680",
        0x90: "@!P0 SYNCS.PHASECHK.TRANS64 P0, [R3+URZ+0x30000], R0",
        0xa0: "@!P0 BRA 0x7060",
        0xb0: "BRA 0x7030",
    }
    insts = parse_sass(text)
    check(insts[2][1:4] == (True, "P0", "BRA") and insts[0][3] == "LDC", "SASS lines parsed (predicate, opcode)")
    exempt, guards, blocks, rejected = retry_blocks(insts, base)
    check(exempt == {0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0} and guards == {0x20} and blocks == [(0x60, 0xb0)]
          and not rejected, "the out-of-line try-wait loop is one retry block; its in-line branch is the guard")
    other = dict(text)  # the block's own try-wait on another flag than the in-line one
    other.update({0x70: "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R3+URZ+0x30000], R0", 0x80: "@!P1 NANOSLEEP.SYNCS 0x989680",
                  0x90: "@!P1 SYNCS.PHASECHK.TRANS64 P1, [R3+URZ+0x30000], R0", 0xa0: "@!P1 BRA 0x7060"})
    check(retry_blocks(parse_sass(other), base)[2] == [(0x60, 0xb0)],
          "an out-of-line block on a flag of its own (its own try-wait's) is a retry block")
    other[0x60] = "@P2 IMAD.U32 R3, RZ, RZ, UR8"
    check(not retry_blocks(parse_sass(other), base)[0], "but not with a move under a third predicate")
    bad = dict(text)
    bad[0x80] = "@!P0 FADD R2, R2, R3"
    ex2, _, _, rej2 = retry_blocks(parse_sass(bad), base)
    check(not ex2 and rej2 and rej2[0][1] == "FADD", "a retry block that also computes is not exempt")
    away = dict(text)
    away[0xb0] = "BRA 0x7040"
    check(not retry_blocks(parse_sass(away), base)[0], "a retry block that returns anywhere but behind its guard is not exempt")
    away = dict(text)
    away[0xa0] = "@!P0 BRA 0x7000"
    check(not retry_blocks(parse_sass(away), base)[0], "a retry block that branches anywhere but to its start is not exempt")

    alloc = {0x00: "WARPSYNC.ALL", 0x10: "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8",
             0x20: "PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0", 0x30: "@!P0 BRA 0x7000", 0x40: "FADD R2, R2, R3"}
    ex3, _, bl3, _ = retry_blocks(parse_sass(alloc), base)
    check(ex3 == {0x00, 0x10, 0x20, 0x30} and bl3 == [(0x00, 0x30)], "the setmaxnreg.inc retry loop is exempt, not what follows it")
    alloc[0x20] = "FMUL R2, R2, R3"
    check(not retry_blocks(parse_sass(alloc), base)[0], "a backward loop that computes is not exempt")
    inline = {0x00: "IMAD.U32 R21, RZ, RZ, UR20", 0x10: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R21+URZ+0x30040], R2",
              0x20: "@!P0 NANOSLEEP.SYNCS 0x989680", 0x30: "@!P0 SYNCS.PHASECHK.TRANS64 P0, [R21+URZ+0x30040], R2",
              0x40: "@!P0 BRA 0x7000", 0x50: "FADD R2, R2, R3"}
    ex4, _, bl4, rej4 = retry_blocks(parse_sass(inline), base)
    check(ex4 == {0x00, 0x10, 0x20, 0x30, 0x40} and bl4 == [(0x00, 0x40)] and not rej4,
          "the in-line try-wait loop is exempt, not what follows it")
    inline[0x20] = "@!P0 FADD R2, R2, R3"
    check(not retry_blocks(parse_sass(inline), base)[0], "an in-line try-wait loop that computes is not exempt")
    inline[0x20] = "@!P0 NANOSLEEP.SYNCS 0x989680"
    inline[0x40] = "@!P1 BRA 0x7000"
    check(not retry_blocks(parse_sass(inline), base)[0], "a loop on another flag than the wait's is not exempt")
    inline[0x40] = "@!P0 BRA 0x7000"
    inline[0x00] = "IMAD.U32 R21, R3, R4, UR20"
    check(not retry_blocks(parse_sass(inline), base)[0], "an IMAD that multiplies is not a retry op")
    inline[0x00] = "IMAD.U32 R21, RZ, RZ, UR20"
    inline[0x50] = "@P2 BRA 0x7010"
    check(not retry_blocks(parse_sass(inline), base)[0], "a loop entered in its middle by another branch is not exempt")
    # IMAD.MOV's move form re-forming the address inside the loop.
    picked = {0x00: "IMAD.MOV.U32 R13, RZ, RZ, R12", 0x10: "IMAD.MOV R13, RZ, RZ, R6",
              0x20: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R13+URZ+0x30020], R0",
              0x30: "@!P0 NANOSLEEP.SYNCS 0x989680", 0x40: "@!P0 SYNCS.PHASECHK.TRANS64 P0, [R13+URZ+0x30020], R0",
              0x50: "@!P0 BRA 0x7000", 0x60: "FADD R2, R2, R3"}
    ex5, _, bl5, _ = retry_blocks(parse_sass(picked), base)
    check(ex5 == {0x00, 0x10, 0x20, 0x30, 0x40, 0x50} and bl5 == [(0x00, 0x50)],
          "an in-line try-wait loop that re-forms its address with IMAD.MOV is exempt")
    picked[0x10] = "IMAD.MOV R13, RZ, RZ, -R6"
    check(not retry_blocks(parse_sass(picked), base)[0], "IMAD.MOV's negated form is not a retry op")
    picked[0x10] = "@!P1 IMAD.MOV R13, RZ, RZ, R6"
    check(not retry_blocks(parse_sass(picked), base)[0],
          "a move under another predicate than the wait's is not a retry op (its predicate count would go unchecked)")
    # A guard far behind its try-wait (independent work scheduled between).
    far = {0x00: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ+0x30020], R2"}
    for k in range(1, 41):
        far[0x10 * k] = f"FFMA R{20 + k % 8}, R{30 + k % 8}, R4, -R5"
    far.update({0x290: "@!P0 BRA 0x7300", 0x2a0: "EXIT", 0x300: "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ+0x30020], R2",
                0x310: "@!P0 NANOSLEEP.SYNCS 0x989680", 0x320: "@!P0 SYNCS.PHASECHK.TRANS64 P0, [R3+URZ+0x30020], R2",
                0x330: "@!P0 BRA 0x7300", 0x340: "BRA 0x72a0"})
    ex6, g6, bl6, _ = retry_blocks(parse_sass(far), base)
    check(g6 == {0x290} and bl6 == [(0x300, 0x340)] and 0x100 not in ex6,
          "a guard 40 instructions behind its try-wait is found; the work between is not exempt")
    far[0x150] = "ISETP.NE.AND P0, PT, R2, RZ, PT"
    check(not retry_blocks(parse_sass(far), base)[1], "a flag redefined before the branch: that branch is no guard")
    far[0x150] = "ISETP.NE.AND P1, P0, R2, RZ, PT"
    check(not retry_blocks(parse_sass(far), base)[1], "nor a flag written as a second destination")
    far[0x150] = "IADD3 R4, P0, R2, R3, RZ"
    check(not retry_blocks(parse_sass(far), base)[1], "nor as a carry-out")
    far[0x150] = "BRA.DIV 0x7400"
    check(not retry_blocks(parse_sass(far), base)[1], "nor past another control-flow instruction (BRA.DIV)")
    far[0x150] = "FFMA R25, R35, R4, -R5"
    far[0x2a0] = "@P3 BRA 0x7200"
    check(not retry_blocks(parse_sass(far), base)[1], "nor past an instruction another branch jumps to")

    # The counter wait (producer.cuh, wait_pair_copied), as ptxas emits it.
    counter = {0x00: "BSSY B4, 0x7070", 0x10: "LDG.E.STRONG.GPU R8, desc[UR18][R4.64]", 0x20: "CCTL.IVALL",
               0x30: "YIELD", 0x40: "ULDC UR4, c[0x0][0x2f0]", 0x50: "ISETP.GE.U32.AND P0, PT, R8, UR4, PT",
               0x60: "@!P0 BRA 0x7010", 0x70: "BSYNC B4", 0x80: "FENCE.VIEW.ASYNC.G"}
    ex7, _, bl7, _ = retry_blocks(parse_sass(counter), base)
    check(ex7 == {0x10, 0x20, 0x30, 0x40, 0x50, 0x60} and bl7 == [(0x10, 0x60)],
          "the counter wait loop is exempt, not what surrounds it")
    swapped = dict(counter)  # the compare before the load: its first turn compares a value from before the loop
    swapped[0x10], swapped[0x50] = counter[0x50], counter[0x10]
    check(not retry_blocks(parse_sass(swapped), base)[0], "a counter loop that compares before it loads is not exempt")
    for off, line, what in ((0x30, "IADD3 R4, R4, 0x4, RZ", "a counter loop that moves its address"),
                            (0x30, "FADD R2, R2, R3", "a counter loop that computes"),
                            (0x50, "ISETP.GE.U32.AND P0, PT, R9, UR4, PT", "a loop whose compare does not read the load"),
                            (0x60, "@!P1 BRA 0x7010", "a loop on another predicate than its compare's"),
                            (0x40, "ULDC.64 UR18, c[0x0][0x208]", "a loop that reloads the load's descriptor"),
                            (0x20, "@P2 CCTL.IVALL", "a predicated instruction in a counter loop"),
                            (0x50, "ISETP.GE.U32.AND P0, PT, R8, R9, PT", "a loop whose bound is a register from outside"),
                            (0x50, "ISETP.GE.U32.OR P0, PT, R8, UR4, P1", "a loop whose compare takes another predicate"),
                            (0x10, "LDG.E.STRONG.GPU R4, desc[UR18][R4.64]", "a loop whose load overwrites its address"),
                            (0x10, "LDG.E.STRONG.GPU R5, desc[UR18][R4.64]", "a loop whose load overwrites half its address")):
        changed = dict(counter)
        changed[off] = line
        check(not retry_blocks(parse_sass(changed), base)[0], f"{what} is not exempt")

    def launch(retries, fadd=64, taken=0):
        return {0x00: {"inst": 8, "thread_inst": 256}, 0x10: {"inst": 8}, 0x20: {"inst": 8, "thread_inst_pred_on": taken},
                0x30: {"inst": fadd, "thread_inst": fadd * 32}, 0x70: {"inst": retries}, 0xa0: {"inst": retries}}
    classes = ["normal", "zeros", "len-0", "normal-repeat"]
    res = judge_per_pc([launch(3), launch(0, taken=32), launch(7), launch(1)], classes, text, base)
    check(res["verdict"] == "PASS" and res["retry_inst_range"] == [0, 14], "retries that vary between launches are exempt and reported")
    res = judge_per_pc([launch(3), launch(0), launch(3, fadd=56), launch(3)], classes, text, base)
    check(res["verdict"] == "FAIL" and res["findings"][0]["offset"] == 0x30 and res["findings"][0]["state"] == "differs between classes",
          "a class that runs fewer iterations of a computing instruction fails, and the instruction is named")
    res = judge_per_pc([launch(3), launch(3), launch(3), launch(3, fadd=65)], classes, text, base)
    check(res["verdict"] == "FAIL" and res["findings"][0]["state"] == "varies between identical launches",
          "variation outside a retry block fails even within a class")
    res = judge_per_pc([launch(3)] * 3, classes)
    check(res["verdict"] == "ERROR", "a missing launch is an error")
    res = judge_per_pc([launch(3), launch(5), launch(3), launch(3)], classes, {})
    check(res["verdict"] == "FAIL", "without the SASS nothing is exempt")


# ---------------------------------------------------------------------------
# The shipped library's SASS, without a GPU (ctest validate_retry_blocks):
# every in-line try-wait of every Hopper kernel must lead to a retry block
# that the rule above accepts, so that the GPU step's exemptions are the
# ones this file describes and nothing else.

def sass_functions(text):
    """cuobjdump -sass output -> {function: {offset: instruction}}."""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur[int(m.group(1), 16)] = m.group(2)
    return funcs


def check_library(lib, cuobjdump):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([cuobjdump, "-xelf", "all", str(Path(lib).resolve())], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        cubins = sorted(Path(tmp).glob("*sm_90a*.cubin"))
        texts = [subprocess.run([cuobjdump, "-sass", str(c)], capture_output=True, text=True, check=True).stdout
                 for c in cubins]
    checked, failed = 0, 0
    for text in texts:
        for name, code in sass_functions(text).items():
            insts = parse_sass(code)
            waits = sum(i[3] == "SYNCS.PHASECHK.TRANS64.TRYWAIT" for i in insts)
            allocs = sum(i[3].startswith("USETMAXREG.TRY_ALLOC") for i in insts)
            counters = [i[0] for i in insts if i[3] == "LDG.E.STRONG.GPU"]
            if not waits and not allocs and not counters:
                continue
            exempt, guards, blocks, rejected = retry_blocks(insts)
            # Every try-wait is either an in-line check with its guard, or the
            # one try-wait of a block (out-of-line behind a guard, or an
            # in-line loop of its own); every strong (acquire) load is the one
            # load of a counter-wait loop.
            exempt_waits = sum(i[3] == "SYNCS.PHASECHK.TRANS64.TRYWAIT" and i[0] in exempt for i in insts)
            ok = waits - exempt_waits == len(guards) and exempt_waits == len(blocks) - allocs - len(counters) and \
                all(c in exempt for c in counters) and not rejected
            checked += 1
            failed += 0 if ok else 1
            if not ok:
                print(f"FAIL {name[:90]}: {waits} try-waits, {len(guards)} guarded retry blocks, "
                      f"{allocs} setmaxnreg loops, {len(counters)} counter loads, {len(blocks)} blocks, "
                      f"rejected {rejected}")
    print(f"retry blocks: {checked} Hopper kernels checked, {failed} not fully covered")
    return 1 if failed or not checked else 0


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="Checks that every mbarrier try-wait and setmaxnreg loop of the "
                                 "library's sm_90a kernels is a retry block the per-instruction gate accepts.")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("library")
    a = ap.parse_args(argv)
    return check_library(a.library, a.cuobjdump)


if __name__ == "__main__":
    sys.exit(main())
