#!/usr/bin/env python3
"""Runs dhp-audit on the corpus cubins and checks every expectation.

  check_audit.py --audit BIN --corpus DIR --cubins DIR

* every kernel in leaky.cu is flagged, on every architecture its marker
  names, AT ITS LEAK-LINE (the finding's line or one of its inlined-at
  sites), with one of the rules its "// LEAK <rule>:" marker allows;
* every kernel in clean.cu audits clean with public-pointers.txt, and
  without it exactly clean_declared_public_lengths is flagged (the
  declaration is what makes it clean);
* exit status 1 for findings, 0 for clean, 2 for a missing file and for a
  file without SASS.
Prints a table; exit status 0 only when everything holds.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ARCHS = ["sm_80", "sm_90a"]


def leak_markers(path):
    """kernel -> (line, allowed rules, archs) from leaky.cu."""
    out, kernel, rule, archs = {}, None, None, None
    for n, line in enumerate(open(path), 1):
        m = re.search(r'__global__\s+void\s+(\w+)', line)
        if m:
            kernel = m.group(1)
        m = re.search(r'// LEAK ([a-d|]+)(?: \[([\w, ]+)\])?:', line)
        if m:
            rule = m.group(1).split("|")
            archs = [a.strip() for a in m.group(2).split(",")] if m.group(2) else ARCHS
        if line.rstrip().endswith("// LEAK-LINE"):
            out[kernel] = (n, rule, archs)
    return out


def run_audit(audit, args):
    p = subprocess.run([audit, "--json"] + args, capture_output=True, text=True)
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stderr


def kernels(doc):
    for f in doc["files"]:
        for k in f["kernels"]:
            yield k


def at_line(finding, fname, line):
    frames = [(finding.get("file"), finding.get("line"))]
    frames += [(x["file"], x["line"]) for x in finding.get("inlined_at", [])]
    return any(f and os.path.basename(f) == fname and l == line for f, l in frames)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--cubins", required=True)
    a = ap.parse_args()
    failures = []
    rows = []
    leaky = [os.path.join(a.cubins, f"leaky.{x}.cubin") for x in ARCHS]
    clean = [os.path.join(a.cubins, f"clean.{x}.cubin") for x in ARCHS]
    public = os.path.join(a.corpus, "public-pointers.txt")

    # Leaky kernels: flagged at the right line with an allowed rule.
    rc, doc, err = run_audit(a.audit, leaky)
    if rc != 1 or doc is None:
        failures.append(f"leaky corpus: exit {rc} (want 1) {err.strip()}")
    else:
        markers = leak_markers(os.path.join(a.corpus, "leaky.cu"))
        seen = set()
        for k in kernels(doc):
            name, arch = k["name"], k["arch"]
            if name not in markers:
                failures.append(f"{name}: no LEAK-LINE marker")
                continue
            line, rules, archs = markers[name]
            seen.add((name, arch))
            hits = [f for f in k["findings"] if at_line(f, "leaky.cu", line)]
            got = sorted({f["rule"][0] for f in hits})
            ok_rule = any(r in rules for r in got)
            if arch in archs:
                status = "ok" if hits and ok_rule else "MISSED"
                if status != "ok":
                    failures.append(f"{name} {arch}: want rule {'|'.join(rules)} at leaky.cu:{line}, "
                                    f"got {got or 'nothing'} there ({len(k['findings'])} findings elsewhere)")
            else:
                status = "n/a (no such instruction on this arch)"
            rows.append((name, arch, f"leaky.cu:{line}", "|".join(rules), ",".join(got) or "-",
                         len(k["findings"]), status))
        for name, (line, rules, archs) in markers.items():
            for arch in archs:
                if (name, arch) not in seen:
                    failures.append(f"{name} {arch}: kernel not found in the audit")

    # Clean kernels, with and without the public-pointer declaration.
    rc, doc, err = run_audit(a.audit, ["--public", public] + clean)
    if rc != 0 or doc is None:
        failures.append(f"clean corpus with declarations: exit {rc} (want 0) {err.strip()}")
    n_clean = 0
    if doc:
        for k in kernels(doc):
            n_clean += 1
            status = "clean" if not k["findings"] else "FALSE POSITIVE"
            if k["findings"]:
                failures.append(f"{k['name']} {k['arch']}: {len(k['findings'])} findings, first "
                                f"{k['findings'][0]['sass']} ({k['findings'][0]['reason']})")
            rows.append((k["name"], k["arch"], "-", "clean", "-", len(k["findings"]), status))
    rc, doc, err = run_audit(a.audit, clean)
    flagged = sorted({k["name"] for k in kernels(doc) if k["findings"]}) if doc else None
    if rc != 1 or flagged != ["clean_declared_public_lengths"]:
        failures.append(f"clean corpus without declarations: exit {rc}, flagged {flagged} "
                        "(want 1, only clean_declared_public_lengths)")
    else:
        rows.append(("clean_declared_public_lengths", "both", "-", "a without --public", "a", "-",
                     "flagged without the declaration: ok"))

    # Errors: exit status 2.
    missing = os.path.join(a.cubins, "does-not-exist.cubin")
    rc, _, err = run_audit(a.audit, [missing])
    if rc != 2:
        failures.append(f"missing file: exit {rc} (want 2)")
    rc, _, err = run_audit(a.audit, [os.path.join(a.corpus, "leaky.cu")])
    if rc != 2:
        failures.append(f"file without SASS: exit {rc} (want 2)")

    print(f"{'kernel':34} {'arch':7} {'leak line':14} {'want':6} {'got':6} {'n':>3}  status")
    for r in rows:
        print(f"{r[0]:34} {r[1]:7} {r[2]:14} {r[3]:6} {r[4]:6} {r[5]!s:>3}  {r[6]}")
    if failures:
        print("\nFAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print(f"\ncorpus: every planted leak flagged at its line; {n_clean} clean kernel builds audit clean; "
          "exit codes 0/1/2 as documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
