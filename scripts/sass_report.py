#!/usr/bin/env python3
"""sass_report.py: what the CUDA kernels compile to, read from ptxas and the SASS (scripts/sass-report.sh runs it).

Usage: sass_report.py WORK_DIR CUOBJDUMP|- [--check]
  WORK_DIR holds, per kernel file, NAME.ptxas.txt (nvcc -Xptxas -v's report) and NAME.cubin.
  CUOBJDUMP: the cuobjdump program (its -sass listing is parsed), or '-' when there is none (then the
  table has the ptxas columns only).
Prints a Markdown report: per kernel (function), registers, spill stores / loads and stack (local
memory) from ptxas; from the SASS, its inner loop (the loop, a backward branch's range, holding the
most MMA instructions; the innermost such loop when several hold as many) and, per iteration of that
loop, the counts of MMA (HMMA, HGMMA), MUFU.EX2, other MUFU, FFMA, FMUL / FADD / FMNMX / FSEL / FSETP
/ F2FP, branches (BRA, BSSY, BSYNC), barriers (BAR, SYNCS, WARPGROUP, DEPBAR), memory and integer /
other instructions; and of the memory instructions, the shared-memory loads of MMA operands
(LDSM: ldmatrix) and others (LDS), with (LDSM + LDS) / MMA, the shared-memory loads per tensor-core
instruction (what FlashAttention-2's tile shapes halve in v2). Per score element: the score
elements one thread handles per iteration are its MUFU.EX2 count minus one rescale exponential per
row a thread holds (ROWS_PER_THREAD: 4 in v2's forward, whose warps own two m16 row tiles; 2 in
v3's, one row pair per m16 slice of the wgmma fragment; none in a backward kernel, which recomputes
P = exp(S - LSE)), each score needing exactly one exponential (both are printed, so the division can
be checked, and a count that is not rows x (1 + a multiple of 4 keys per row) is reported as a
failure: the table is then wrong for that kernel); "softmax instructions per element" = (MUFU +
FFMA + other float + branches) / that (the float work and control flow of the softmax); the last
column = every instruction but MMA, memory and barriers / that (integer address arithmetic
included).
--check: exit 1 if any forward kernel (a name with 'fwd' or 'forward') spills or uses local memory
(a stack frame). Either way, exit 1 when a forward kernel's exponential count does not fit its rows
per thread (above).
What it is not: a timing. Counts of instructions are not cycles; they bound what the softmax costs.
"""
import os
import re
import subprocess
import sys

work, cuobjdump = sys.argv[1], sys.argv[2]
check = "--check" in sys.argv[3:]

MMA = ("HMMA", "HGMMA", "IMMA", "QMMA", "DMMA")
MEM = ("LDG", "STG", "LDS", "STS", "LDSM", "STSM", "LDGSTS", "LDL", "STL", "LD", "ST", "ATOM", "ATOMS", "ATOMG", "RED",
       "UBLKCP", "UTMALDG", "UTMASTG", "UTMAPF", "LDC", "ULDC", "UTMACMDFLUSH")
BAR = ("BAR", "SYNCS", "WARPGROUP", "DEPBAR", "LDGDEPBAR", "WARPSYNC", "MEMBAR", "FENCE", "ARRIVES", "UCGABAR_ARV",
       "UCGABAR_WAIT", "ERRBAR", "CCTL")
BRANCH = ("BRA", "BSSY", "BSYNC", "BREAK", "CALL", "RET", "JMP", "EXIT", "WARPSYNC.ALL")


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def short(name):
    """cplab::cuda::detail::(anon)::fwd_kernel<128, __nv_bfloat16>(...) -> fwd_kernel<128, __nv_bfloat16>"""
    n, depth = name, 0
    if n.endswith(")"):  # the parameters: from the last ')' back to its '('
        for i in range(len(n) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(n[i], 0)
            if depth == 0:
                n = n[:i]
                break
    n = re.sub(r"^void ", "", n)
    depth = 0
    cut = 0
    for i, c in enumerate(n):  # the last '::' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == ":" and depth == 0 and i + 1 < len(n) and n[i + 1] == ":":
            cut = i + 2
    return n[cut:]


def ptxas(path):
    """{mangled: {regs, spill_st, spill_ld, stack, smem}} from nvcc -Xptxas -v's report"""
    res, cur = {}, None
    for line in open(path):
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([_A-Za-z0-9]+)'?", line)
        if m:
            cur = m.group(1)
            res.setdefault(cur, {"regs": None, "spill_st": 0, "spill_ld": 0, "stack": 0, "smem": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            res[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            res[cur]["regs"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            res[cur]["smem"] = int(m.group(1))
    return res


def sass(cubin):
    """{mangled: [(address, opcode, text)]} from cuobjdump -sass"""
    p = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
    if p.returncode != 0:  # a cubin without device code (host-only .cu files): nothing to list
        return {}
    out = p.stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur is not None:
            text = m.group(2).strip()
            body = re.sub(r"^@!?U?P[0-9T]\s+", "", text)
            funcs[cur].append((int(m.group(1), 16), body.split()[0] if body else "", text))
    return funcs


def base(op):
    return op.split(".")[0]


def inner_loop(ins):
    """the (start, end) addresses of the loop with the most MMA instructions (innermost on a tie)"""
    loops = []
    for addr, op, text in ins:
        if base(op) == "BRA":
            m = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?(0x[0-9a-f]+)", text)
            if m and int(m.group(1), 16) < addr:
                loops.append((int(m.group(1), 16), addr))
    best = None
    for lo, hi in loops:
        mma = sum(1 for a, op, _ in ins if lo <= a <= hi and base(op) in MMA)
        key = (mma, -(hi - lo))
        if mma > 0 and (best is None or key > best[0]):
            best = (key, lo, hi)
    return (best[1], best[2]) if best else None


def classify(op):
    b = base(op)
    if b in MMA:
        return "mma"
    if op.startswith("MUFU.EX2"):
        return "ex2"
    if b == "MUFU":
        return "mufu"
    if b == "FFMA":
        return "ffma"
    if b in ("FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "F2FP", "F2F", "FMNMX3"):
        return "fp"
    if b in BRANCH:
        return "branch"
    if b in BAR:
        return "barrier"
    if b in MEM or b.startswith("LD") or b.startswith("ST"):
        return "memory"
    return "other"


COLS = ["mma", "ex2", "mufu", "ffma", "fp", "branch", "barrier", "memory", "other"]
# rows of the score tile each thread holds in a forward kernel's fragments, per kernel file: one
# rescale exponential (alpha) per row and tile, the rest one per score
ROWS_PER_THREAD = {"attention_v2_fwd": 4, "attention_v3_fwd": 2}
DEFAULT_ROWS = 2  # one m16 row tile (mma.sync m16n8 C fragment, a wgmma m64 fragment's slice): rows g and g + 8
rows, failures = [], []
files = sorted(f[:-len(".ptxas.txt")] for f in os.listdir(work) if f.endswith(".ptxas.txt"))
for stem in files:
    info = ptxas(os.path.join(work, stem + ".ptxas.txt"))
    code = {}
    cubin = os.path.join(work, stem + ".cubin")
    if cuobjdump != "-" and os.path.exists(cubin):
        code = sass(cubin)
    mangled = sorted(info)
    for mang, dem in zip(mangled, demangle(mangled)):
        p = info[mang]
        r = {"file": stem, "kernel": short(dem), **p, "loop": None}
        ins = code.get(mang)
        if ins:
            lp = inner_loop(ins)
            if lp:
                counts = dict.fromkeys(COLS, 0)
                for a, op, _ in ins:
                    if lp[0] <= a <= lp[1]:
                        counts[classify(op)] += 1
                smem = {"ldsm": 0, "lds": 0}
                for a, op, _ in ins:
                    if lp[0] <= a <= lp[1] and base(op) in ("LDSM", "LDS"):
                        smem[base(op).lower()] += 1
                backward = any(w in r["kernel"] for w in ("bwd", "backward", "dq_", "dkdv"))
                rows_pt = 0 if backward else ROWS_PER_THREAD.get(stem, DEFAULT_ROWS)  # the backward: no rescale
                elems = counts["ex2"] - rows_pt
                if rows_pt and (counts["ex2"] % rows_pt or (counts["ex2"] // rows_pt - 1) % 4):
                    failures.append(f"{stem}: {r['kernel']}: {counts['ex2']} MUFU.EX2 per iteration is not {rows_pt} rows "
                                    "x (1 + a multiple of 4 keys): ROWS_PER_THREAD is wrong for it")
                    elems = 0
                rest = sum(counts[c] for c in COLS if c not in ("mma", "memory", "barrier"))
                soft = sum(counts[c] for c in ("ex2", "mufu", "ffma", "fp", "branch"))
                r["loop"] = {"range": lp, **counts, **smem, "rows": rows_pt, "elements": elems,
                             "smem_per_mma": (smem["ldsm"] + smem["lds"]) / counts["mma"],
                             "softmax": soft / elems if elems > 0 else None,
                             "per_element": rest / elems if elems > 0 else None}
        rows.append(r)
        forward = "fwd" in r["kernel"] or "forward" in r["kernel"]
        if check and forward and (p["spill_st"] or p["spill_ld"] or p["stack"]):
            failures.append(f"{stem}: {r['kernel']}: {p['spill_st']} B spill stores, {p['spill_ld']} B spill loads, "
                            f"{p['stack']} B stack frame (local memory)")

print("| file | kernel | regs | spill st/ld (B) | stack (B) | inner loop | MMA | MUFU.EX2 | other MUFU | FFMA "
      "| FMUL/FADD/FMNMX/FSEL/F2FP | branches | barriers | memory | LDSM | LDS | (LDSM + LDS) / MMA | integer and other "
      "| rows / thread | score elements / thread | softmax instr. / element | all but MMA, memory, barriers / element |")
print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    L = r["loop"]
    if L:
        cells = [f"0x{L['range'][0]:x}-0x{L['range'][1]:x}"] + [str(L[c]) for c in COLS[:-1]]
        cells += [str(L["ldsm"]), str(L["lds"]), f"{L['smem_per_mma']:.3f}", str(L["other"]), str(L["rows"]), str(L["elements"])]
        cells += [f"{x:.1f}" if x is not None else "-" for x in (L["softmax"], L["per_element"])]
    else:
        cells = ["-"] * (len(COLS) + 8)
    print(f"| {r['file']} | `{r['kernel']}` | {r['regs']} | {r['spill_st']}/{r['spill_ld']} | {r['stack']} | " + " | ".join(cells) + " |")
if cuobjdump == "-":
    print("\n(no cuobjdump: the loop columns are empty; scripts/sass-report.sh installs it from PyPI when it can)")
if failures:
    print("\nFAIL: forward kernels with spills or local memory, or exponentials that do not fit their rows:", file=sys.stderr)
    for f in failures:
        print("  " + f, file=sys.stderr)
    sys.exit(1)
