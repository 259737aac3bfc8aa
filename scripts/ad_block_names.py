#!/usr/bin/env python3
"""Block names of F_grad, per function, to keep the names schedules use stable.

Schedules of F_grad name its blocks as `tirc grad` prints them (`hoist0`, `X_grad_init`,
`conv_dP`; tests/zoo/grad_sched16, grad_sched17). A change to autodiff may add blocks with new
names, but a name that exists must keep naming the same computation. This script runs
`tirc grad` (and `tirc stats`) on every function of examples/ops/*.tir, examples/*.tir and
tests/zoo/**/*.tir and records, per function, F's FLOPs, F_grad's FLOPs and for every block
of F_grad: the buffers it writes, its iter var extents, the non-hoist buffers it reads
(through the hoist buffers it loads, transitively) and its text.

  scripts/ad_block_names.py dump OUT.json [--tirc build/tirc] [--jobs 2]
  scripts/ad_block_names.py compare BASE.json NEW.json [--text]

`compare` fails (exit 1) when a baseline block is missing or its writes / extents /
transitive reads changed; it lists functions whose FLOPs changed and the names added, and
with --text the blocks whose text changed (a hoist block that now loads a new sub-value
buffer: check by eye that it computes the same value).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def files():
    out = sorted(glob.glob(os.path.join(ROOT, "examples/ops/*.tir")))
    out += sorted(glob.glob(os.path.join(ROOT, "examples/*.tir")))
    out += sorted(glob.glob(os.path.join(ROOT, "tests/zoo/**/*.tir"), recursive=True))
    return out


def funcs_of(path):
    with open(path) as f:
        return re.findall(r"^func\s+(\w+)\s*\(", f.read(), re.M)


def func_text(module, name):
    m = re.search(r"^func\s+" + re.escape(name) + r"\s*\(", module, re.M)
    if not m:
        return None
    return block_span(module, m.start())


def block_span(text, start):
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start:j + 1]
    return text[start:]


def blocks_of(ftext):
    out = {}
    for m in re.finditer(r"\bblock\s+(\w+)\s*\(([^)]*)\)", ftext):
        name = m.group(1)
        body = block_span(ftext, m.start())
        ext = re.findall(r"(spatial|reduce|scan)\(([^)=]*)\)", m.group(2))
        writes = re.search(r"^\s*writes (.*)$", body, re.M)
        reads = re.search(r"^\s*reads (.*)$", body, re.M)
        wbufs = sorted(set(re.findall(r"(\w+)\[", writes.group(1)))) if writes else []
        rbufs = sorted(set(re.findall(r"(\w+)\[", reads.group(1)))) if reads else []
        out[name] = {"writes": wbufs, "reads": rbufs, "extents": [f"{k}({v})" for k, v in ext],
                     "text": body}
    # Transitive reads: a hoist buffer read stands for what its block reads.
    writer = {}
    for n, b in out.items():
        for w in b["writes"]:
            if w.startswith("hoist"):
                writer[w] = n

    def trans(n, seen):
        res = set()
        for r in out[n]["reads"]:
            if r in writer and writer[r] not in seen and r not in out[n]["writes"]:
                res |= trans(writer[r], seen | {writer[r]})
            elif not r.startswith("hoist"):
                res.add(r)
        return res

    for n in out:
        out[n]["treads"] = sorted(trans(n, {n}))
    return out


def flops(tirc, path, func):
    r = subprocess.run([tirc, "stats", path, "--func", func, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("flops")


def one(tirc, path, func):
    rel = os.path.relpath(path, ROOT)
    key = f"{rel}::{func}"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "g.tir")
        r = subprocess.run([tirc, "grad", path, "--func", func, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            return key, {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
        with open(out) as f:
            mod = f.read()
        ft = func_text(mod, func + "_grad")
        if ft is None:
            return key, {"error": "no F_grad"}
        return key, {"flops": flops(tirc, path, func), "grad_flops": flops(tirc, out, func + "_grad"),
                     "blocks": blocks_of(ft)}


def dump(args):
    jobs = []
    for p in files():
        for fn in funcs_of(p):
            jobs.append((p, fn))
    res = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for key, v in ex.map(lambda j: one(args.tirc, *j), jobs):
            res[key] = v
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    print(f"{len(res)} functions, {sum('error' in v for v in res.values())} refused")


def compare(args):
    base = json.load(open(args.base))
    new = json.load(open(args.new))
    bad, changed_flops, added, text_changed = [], [], 0, []
    for key, b in base.items():
        n = new.get(key)
        if n is None:
            bad.append(f"{key}: function missing")
            continue
        if "error" in b:
            if "error" not in n:
                print(f"note: {key} was refused, now differentiates")
            continue
        if "error" in n:
            bad.append(f"{key}: now refused: {n['error']}")
            continue
        if b["grad_flops"] != n["grad_flops"]:
            changed_flops.append((key, b["flops"], b["grad_flops"], n["grad_flops"]))
        for name, bb in b["blocks"].items():
            nb = n["blocks"].get(name)
            if nb is None:
                bad.append(f"{key}: block {name} missing")
                continue
            for fld in ("writes", "extents", "treads"):
                if bb[fld] != nb[fld]:
                    bad.append(f"{key}: block {name}: {fld} {bb[fld]} -> {nb[fld]}")
            if bb["text"] != nb["text"]:
                text_changed.append((key, name, bb["text"], nb["text"]))
        new_names = sorted(set(n["blocks"]) - set(b["blocks"]))
        added += len(new_names)
        if new_names and args.verbose:
            print(f"{key}: added {' '.join(new_names)}")
    for key, ff, g0, g1 in changed_flops:
        r = lambda g: f"{g / ff:.3g}x" if ff else "?"
        print(f"flops {key}: {g0} -> {g1} ({r(g0)} -> {r(g1)}){'  HIGHER' if g1 > g0 else ''}")
    print(f"{len(changed_flops)} functions changed FLOPs "
          f"({sum(g1 > g0 for _, _, g0, g1 in changed_flops)} higher), {added} block names added, "
          f"{len(text_changed)} baseline blocks changed text")
    if args.text:
        for key, name, t0, t1 in text_changed:
            print(f"--- {key}: {name}\n{t0}\n+++\n{t1}\n")
    for b in bad:
        print("BAD", b)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--tirc", default=os.path.join(ROOT, "build/tirc"))
    d.add_argument("--jobs", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("base")
    c.add_argument("new")
    c.add_argument("--text", action="store_true")
    c.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args)
    else:
        sys.exit(compare(args))


if __name__ == "__main__":
    main()
