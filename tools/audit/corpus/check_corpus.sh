#!/usr/bin/env bash
# Compile the dhp-audit corpus (leaky.cu / clean.cu) for sm_80 and sm_90a and
# check, with simple per-kernel SASS heuristics, that every planted leak is
# still visible after optimisation (i.e. not if-converted into a select).
#
# Usage: tools/audit/corpus/check_corpus.sh [--markdown]
# Exit status: 0 if every leak is present on every arch, 1 otherwise.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NVCC="${NVCC:-nvcc}"
PYCU=/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin
CUOBJDUMP="${CUOBJDUMP:-$(command -v cuobjdump || echo "$PYCU/cuobjdump")}"
NVDISASM="${NVDISASM:-$(command -v nvdisasm || echo "$(dirname "$CUOBJDUMP")/nvdisasm")}"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

for arch in 80 90a; do
  for f in leaky clean; do
    "$NVCC" -std=c++17 -O3 -lineinfo -cubin \
      "-gencode=arch=compute_${arch},code=sm_${arch}" \
      -o "$TMP/${f}_sm_${arch}.cubin" "$HERE/$f.cu"
    # cuobjdump -sass: plain SASS (kept for humans); nvdisasm -gi: SASS with
    # line info incl. inlining chains (used by the checker).
    "$CUOBJDUMP" -sass "$TMP/${f}_sm_${arch}.cubin" > "$TMP/${f}_sm_${arch}.cuobjdump.sass"
    "$NVDISASM" -gi -c "$TMP/${f}_sm_${arch}.cubin" > "$TMP/${f}_sm_${arch}.sass"
  done
done
[[ -n "${KEEP_SASS:-}" ]] && { mkdir -p "$KEEP_SASS"; cp "$TMP"/*.sass "$KEEP_SASS"/; }

exec "$PY" - "$HERE" "$TMP" "$@" <<'PYEOF'
import re, sys, os
here, tmp = sys.argv[1], sys.argv[2]
md = "--markdown" in sys.argv[3:]
ARCHS = ["80", "90a"]
PBR = r"^@!?U?P[0-9T]\s+(BRA|BRX|BREAK|EXIT|RET)\b"        # predicated control flow
PMEM = r"^@!?U?P[0-9T]\s+(LD|ST|ATOM|RED|LDG|STG|LDS|STS|LDGSTS)"
# kernel -> list of (scope, regex); every regex must match some instruction in
# scope. scope 'line' = instructions attributed to the LEAK-LINE (incl. inlined
# code whose inlined-at chain reaches that line); 'func' = whole kernel.
H = {
 "leak_secret_branch":        [("line", PBR)],
 "leak_loop_bound_loaded":    [("line", PBR)],
 "leak_early_return_len":     [("line", PBR)],
 "leak_smem_table_index":     [("line", r"^LDS\S*\s+\S+,\s*.*\[R")],
 "leak_global_secret_index":  [("line", r"^LDG\S*\s+\S+,\s*.*\[R")],
 "leak_store_guarded":        [("line", PBR + "|" + r"^@!?U?P[0-9T]\s+STG")],
 "leak_load_guarded":         [("line", PBR + "|" + r"^@!?U?P[0-9T]\s+LDG")],
 "leak_ballot_branch":        [("func", r"^VOTE"), ("line", PBR)],
 "leak_ieee_fdiv":            [("func", r"^MUFU\.RCP"), ("func", r"^FCHK|^CALL"), ("func", PBR)],
 "leak_ieee_sqrtf":           [("func", r"^MUFU\.RSQ"), ("func", r"^CALL|^BSSY"), ("func", PBR)],
 "leak_atomic_secret_addr":   [("line", r"^(RED|ATOM)\S*\s+.*\[R")],
 "leak_break_masked_row":     [("line", PBR)],
 "leak_cp_async_secret_src":  [("line", r"^LDGSTS")],
 "leak_smem_roundtrip_bound": [("func", r"^LDS"), ("line", PBR)],
 "leak_local_array_index":    [("func", r"^STL"), ("line", r"^LDL")],
 "leak_select_sunk_load":     [("line", r"^SEL|^@!?U?P[0-9T]\s+(LDG|LDC|MOV)"), ("line", r"LDG")],
 "leak_atomic_guarded":       [("line", PBR + "|" + r"^@!?U?P[0-9T]\s+(RED|ATOM)")],
 "leak_tma_secret_coord":     [("func", r"UTMALDG"), ("line", r"ULOP3|R2UR")],
 "leak_tex_fetch_secret_index": [("line", r"^TLD")],
 "leak_tex2d_secret_coord":   [("line", r"^TEX")],
 "leak_tex_gather_secret_coord": [("line", r"^TLD4")],
 "leak_tex_grad_secret":      [("line", r"^TXD")],
 "leak_tex_lod_secret":       [("line", r"^TEX\S*\.LL")],
 "leak_tex_secret_handle":    [("line", r"^LDG"), ("line", r"TLD")],
 "leak_tex_texel_branch":     [("func", r"TLD"), ("line", PBR)],
 "leak_surf_write_secret_row": [("line", r"^SUST")],
 "leak_surf_read_secret_row": [("line", r"^SULD")],
 "leak_surf_secret_handle":   [("line", r"^LDG"), ("line", r"^SUST")],
 "leak_cache_policy_secret":  [("line", r"R2UR UR\d+"), ("line", r"^LDG\S*\s+\S+,\s*desc\[")],
 "leak_i2f_s64_high_word":    [("line", r"^I2F\.S64"), ("line", r"^ST")],
 "leak_f2i_f64_high_word":    [("line", r"^F2I\.F64"), ("line", r"^ST")],
 "leak_generic_store_to_stack": [("func", r"^ST\.E"), ("line", r"^LDL")],
 "leak_local_subword_overwrite": [("func", r"^STL\.(U|S)16"), ("line", r"^LDL")],
 "leak_constant_loop_bound":  [("func", r"c\[0x3\]"), ("line", PBR)],
 "leak_constant_table_index": [("line", r"^LDC\S*\s+\S+,\s*c\[0x3\]\[R")],
 "leak_printf_call":          [("line", r"^CALL\.ABS")],
 "leak_device_malloc":        [("line", r"^CALL\.ABS")],
 "leak_prefetch_secret_addr": [("line", r"^CCTL")],
 "leak_ldmatrix_secret_row":  [("line", r"^LDSM")],
 "leak_nanosleep_secret":     [("line", r"^NANOSLEEP\s+R")],
 "leak_red_async_secret_addr": [("line", r"^REDAS")],
}

def parse_src(path):
    """kernel -> (rule, leak line number, description)."""
    ks, cur, rule, desc = {}, None, None, None
    for n, l in enumerate(open(path), 1):
        m = re.search(r'__global__\s+void\s+(\w+)\s*\(', l)
        if m: cur = m.group(1)
        m = re.search(r'//\s*LEAK\s+([a-d|]+)(?:\s*\[([\w, ]+)\])?:\s*(.*)', l)
        if m: rule, archs, desc = m.group(1), m.group(2), m.group(3).strip()
        if "// LEAK-LINE" in l and cur:
            ks[cur] = (rule, n, desc, [x.strip().replace("sm_", "") for x in archs.split(",")] if archs else ARCHS)
    return ks

def parse_sass(path, srcname):
    """kernel -> list of (opcode text, set of srcname line numbers)."""
    fns, cur, lines = {}, None, set()
    for raw in open(path):
        m = re.match(r'^\.text\.(\w+):', raw)
        if m: cur = m.group(1); fns[cur] = []; lines = set(); continue
        if raw.lstrip().startswith("//##"):
            # a new annotation block replaces the previous one
            if not getattr(parse_sass, "_inblock", False): lines = set()
            parse_sass._inblock = True
            for f, ln in re.findall(r'File "([^"]+)", line (\d+)', raw):
                if os.path.basename(f) == srcname: lines.add(int(ln))
            continue
        parse_sass._inblock = False
        m = re.match(r'^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;', raw)
        if m and cur: fns[cur].append((m.group(1), set(lines)))
    return fns

def check(fn, leakline, rules):
    seen, ok = [], True
    for scope, rx in rules:
        hits = [op for op, ls in fn if (scope == "func" or leakline in ls) and re.search(rx, op)]
        if not hits: ok = False; seen.append(f"(no {scope} match for /{rx[:30]}/)")
        else: seen.append(hits[0].split()[0] if hits[0].startswith("@") is False else " ".join(hits[0].split()[:2]))
    return ok, seen

leaks = parse_src(os.path.join(here, "leaky.cu"))
sass = {a: parse_sass(os.path.join(tmp, f"leaky_sm_{a}.sass"), "leaky.cu") for a in ARCHS}
allok = True
if md:
    print("| kernel | rule | line | sm_80 | sm_90a |"); print("|---|---|---|---|---|")
for k, (rule, ln, desc, archs) in leaks.items():
    cols = []
    for a in ARCHS:
        fn = sass[a].get(k)
        if a not in archs: ok, seen = True, ["n/a on this arch"]
        elif fn is None: ok, seen = False, ["kernel missing"]
        else: ok, seen = check(fn, ln, H.get(k, [("line", PBR)]))
        allok &= ok
        cols.append(("yes" if ok else "NO") + ": " + ", ".join(f"`{s}`" if md else s for s in seen))
    if md: print(f"| `{k}` | {rule} | leaky.cu:{ln} | {cols[0]} | {cols[1]} |")
    else: print(f"{k:28s} rule {rule} line {ln:4d} | sm_80 {cols[0]:45s} | sm_90a {cols[1]}")
missing = set(H) - set(leaks)
if missing: print("heuristic without kernel:", missing); allok = False

# Clean kernels: informational summary of the suspicious-looking features.
print()
if md:
    print("| clean kernel | arch | pred. control flow | pred. mem ops | LDL/STL | CALL/FCHK |")
    print("|---|---|---|---|---|---|")
for a in ARCHS:
    cs = parse_sass(os.path.join(tmp, f"clean_sm_{a}.sass"), "clean.cu")
    for k, fn in cs.items():
        ops = [o for o, _ in fn]
        c = lambda rx: sum(bool(re.search(rx, o)) for o in ops)
        row = (c(PBR), c(PMEM), c(r"^(LDL|STL)"), c(r"^(CALL|FCHK)"))
        if md: print(f"| `{k}` | sm_{a} | {row[0]} | {row[1]} | {row[2]} | {row[3]} |")
        else: print(f"clean {k:26s} sm_{a:3s} predCF={row[0]} predMem={row[1]} local={row[2]} slowpath={row[3]}")
print("\nALL LEAKS PRESENT" if allok else "\nSOME LEAKS MISSING")
sys.exit(0 if allok else 1)
PYEOF
