#!/usr/bin/env python3
"""Operator-zoo gradient cost table for bench/README.md.

For every examples/ops/OP.tir: FLOPs of OP and of OP_grad (`tirc grad`, `tirc stats --json`),
their ratio, the time `tirc grad` takes, and whether `tirc check-grad` passes. Then the
linear-growth benchmark: `tirc grad` on N-deep product chains (bench/zoo_chain.py) for
N = 1000 and 10000 (time and FLOPs should grow ~10x, not ~100x).

    zoo_ratios.py [--tirc PATH] [--ops a,b,...] [--no-chain] [--update bench/README.md]

Without --update the markdown is printed; with it, the part of the README between
<!-- zoo:begin --> and <!-- zoo:end --> is replaced (appended when absent).
Only the standard library is needed.
"""
import argparse
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from readme_section import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- zoo:begin -->", "<!-- zoo:end -->"


def find_tirc():
    for d in ("build-zoo", "build", "build-release"):
        p = os.path.join(ROOT, d, "tirc")
        if os.access(p, os.X_OK):
            return p
    return "tirc"


def zoo_inputs(path):
    flags = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*#\s*zoo-input:\s*(\S+)\s*$", line)
            if m:
                flags += ["--input", m.group(1)]
    return flags


def run(cmd, timeout=600):
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.perf_counter() - t
    except subprocess.TimeoutExpired:
        return -1, "timeout", time.perf_counter() - t


def stats(tirc, path, func, extra):
    rc, out, _ = run([tirc, "stats", path, "--func", func, "--json"] + extra)
    if rc != 0:
        return None
    try:
        return json.loads(out[out.index("{"):])
    except (ValueError, json.JSONDecodeError):
        return None


def interp_ms(tirc, path, func, extra):
    """Median time of one interpreter run (`tirc bench --engine interp`), or None."""
    rc, out, _ = run([tirc, "bench", path, "--func", func, "--engine", "interp", "--json",
                      "--repeat", "21", "--warmup", "3"] + extra)
    if rc != 0:
        return None
    try:
        return json.loads(out[out.index("{"):])["median_ms"]
    except (ValueError, KeyError, json.JSONDecodeError):
        return None


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return (lines[-1] if lines else "")[:80].replace("|", "/")


def op_row(tirc, path, tmp):
    op = os.path.splitext(os.path.basename(path))[0]
    extra = zoo_inputs(path)
    gpath = os.path.join(tmp, op + "_grad.tir")
    rc, out, tgrad = run([tirc, "grad", path, "--func", op, "-o", gpath])
    if rc != 0:
        return f"| {op} | | | | | | | | grad failed: {first_line(out)} |"
    fs, gs = stats(tirc, path, op, extra), stats(tirc, gpath, op + "_grad", extra)
    rc, out, _ = run([tirc, "check-grad", path, "--func", op] + extra)
    cg = "pass" if rc == 0 else f"FAIL ({first_line(out)})"
    tf, tg = interp_ms(tirc, path, op, extra), interp_ms(tirc, gpath, op + "_grad", extra)
    times = (f"{tf * 1e3:.1f} | {tg * 1e3:.1f} | {tg / tf:.2f}" if tf and tg else " | | ")
    if not fs or not gs:
        return f"| {op} | | | | {times} | {tgrad * 1e3:.0f} | stats failed; check-grad {cg} |"
    f, g = fs.get("flops", 0), gs.get("flops", 0)
    ratio = f"{g / f:.2f}" if f else f"({g / max(fs.get('stores', 1), 1):.2f} per store)"
    return f"| {op} | {f} | {g} | {ratio} | {times} | {tgrad * 1e3:.0f} | {cg} |"


def chain_rows(tirc, tmp, sizes):
    rows, prev = [], None
    for n in sizes:
        path = os.path.join(tmp, f"chain{n}.tir")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "zoo_chain.py"), str(n),
                        "--name", "chain", "-o", path], check=True)
        gpath = os.path.join(tmp, f"chain{n}_grad.tir")
        # CPU time (user + system) of the child: wall time on a shared machine measures the load.
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        rc, out, _ = run([tirc, "grad", path, "--func", "chain", "-o", gpath], timeout=1800)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if rc != 0:
            rows.append(f"| {n} | grad failed: {first_line(out)} | | | | | |")
            continue
        size = os.path.getsize(gpath)
        fs, gs = stats(tirc, path, "chain", []), stats(tirc, gpath, "chain_grad", [])
        f = fs.get("flops") if fs else None
        g = gs.get("flops") if gs else None
        growth = f"{t / prev[0]:.1f}x" if prev else ""
        size_growth = f"{size / prev[1]:.1f}x" if prev else ""
        prev = (t, size)
        rows.append(f"| {n} | {t:.2f} | {growth} | {size} | {size_growth} | {f} | {g} |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tirc", default=find_tirc())
    ap.add_argument("--ops", help="comma-separated subset of ops")
    ap.add_argument("--no-chain", action="store_true")
    ap.add_argument("--chain-sizes", default="1000,10000")
    ap.add_argument("--update", metavar="README")
    a = ap.parse_args()

    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "ops", "*.tir")))
    if a.ops:
        keep = set(a.ops.split(","))
        paths = [p for p in paths if os.path.splitext(os.path.basename(p))[0] in keep]
    lines = [BEGIN, "## Operator zoo: gradient cost", "",
             f"Generated by `bench/zoo_ratios.py` ({time.strftime('%Y-%m-%d')}). FLOPs are "
             "`tirc stats --json` totals of `OP` and of `OP_grad` from `tirc grad` (default "
             "`--wrt`: every float input); the zoo test requires ratio <= 3 (for a forward "
             "with no FLOPs: gradient FLOPs <= 3x forward stores). `grad ms` is the wall time "
             "of `tirc grad`; `check-grad` is `tirc check-grad OP.tir --func OP`. `interp us` "
             "are median times of one run of OP and of OP_grad in the reference interpreter "
             "(`tirc bench --engine interp`, 21 runs, same random inputs), `time ratio` their "
             "quotient (F_grad also recomputes the forward values it needs).", "",
             "| op | forward FLOPs | gradient FLOPs | ratio | interp us F | interp us F_grad | time ratio "
             "| grad ms | check-grad |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    with tempfile.TemporaryDirectory(prefix="zoo_ratios_") as tmp:
        for p in paths:
            row = op_row(a.tirc, p, tmp)
            lines.append(row)
            print(row, file=sys.stderr)
        if not a.no_chain:
            sizes = [int(s) for s in a.chain_sizes.split(",")]
            lines += ["", "### Linear growth: N-deep product chain (`bench/zoo_chain.py N`)", "",
                      "`tirc grad` CPU time (user + system) and printed size (bytes of the module `tirc grad -o` "
                      "writes) on a chain of N blocks `T_k = T_{k-1} * X`; linear growth means "
                      "both x10 for N x10.", "",
                      "| N | grad CPU s | time growth | printed bytes | size growth | forward FLOPs "
                      "| gradient FLOPs |",
                      "|---:|---:|---:|---:|---:|---:|---:|"]
            for row in chain_rows(a.tirc, tmp, sizes):
                lines.append(row)
                print(row, file=sys.stderr)
    lines.append(END)
    text = "\n".join(lines) + "\n"
    write_section(text, BEGIN, END, a.update)


if __name__ == "__main__":
    main()
