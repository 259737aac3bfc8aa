#!/usr/bin/env python3
"""Gradients at realistic sizes, compiled: time of F_grad against F (bench/grad_scale/*.tir).

The zoo table (zoo_ratios.py) uses tiny shapes and the interpreter. Here each operator has
the sizes of a real network layer; `tirc grad` derives OP_grad, and both OP and OP_grad are
JIT-compiled unscheduled (`tirc bench --no-schedule --threads 1`) and timed on the same
random inputs. The reference is F itself, run in the same process as F_grad's timing
rounds are interleaved with F's: `F_grad / F` is the cost of the backward (it includes the
recomputation of the forward values it needs, as F_grad keeps no state). The PyTorch
columns (CPU, one thread, when /usr/bin/python3 has torch) time the same operator's forward
(grad mode) and forward+backward (autograd, activations saved) for context: a peer's ratio
on the same machine.

Times are the minimum over rounds of `tirc bench`'s minimum (the machine is shared: the
minimum is the least disturbed run).

    /usr/bin/python3 bench/grad_scale.py [--tirc PATH] [--ops a,b] [--rounds R] [--repeat N]
                                         [--update bench/README.md]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from readme_section import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- grad-scale:begin -->", "<!-- grad-scale:end -->"

# The same operators in PyTorch; args are the function's buffer parameters in order.
TORCH = {
    "max_pool2d": "F.max_pool2d(X, 3, 2, 1)",
    "avg_pool2d": "F.avg_pool2d(X, 3, 2)",
    "conv2d": "F.conv2d(X, W, padding=1)",
    "conv2d_strided": "F.conv2d(X, W, stride=2)",
    "conv2d_transpose": "F.conv_transpose2d(X, W, stride=2, padding=1, output_padding=1)",
    "dense": "X @ W.t()",
    "softmax": "torch.softmax(X, 1)",
    "layer_norm": "F.layer_norm(X, (X.shape[1],), Gamma, Beta, 1e-5)",
    "upsampling_nearest": "F.interpolate(X, scale_factor=2, mode='nearest')",
    "embedding": "F.embedding(I.long(), E)",
    "cumsum": "torch.cumsum(X, 1)",
}


def find_tirc():
    for d in ("build", "build-release"):
        p = os.path.join(ROOT, d, "tirc")
        if os.access(p, os.X_OK):
            return p
    return "tirc"


def params(path, func):
    """[(name, dtype, shape, (lo, hi) or None)] of func's buffer parameters."""
    text = open(path).read()
    m = re.search(r"func\s+%s\s*\((.*?)\)\s*->" % re.escape(func), text, re.S)
    out = []
    for p in re.finditer(r"(\w+)\s*:\s*(\w+)\[([^\]]*)\](?:\s*in\s*\[([^\]]*)\])?", m.group(1)):
        shape = [int(s) for s in p.group(3).split(",")]
        rng = tuple(float(v) for v in p.group(4).split(",")) if p.group(4) else None
        out.append((p.group(1), p.group(2), shape, rng))
    return out


def tirc_bench(tirc, path, func, repeat):
    p = subprocess.run([tirc, "bench", path, "--func", func, "--repeat", str(repeat),
                        "--threads", "1", "--no-schedule", "--json"],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip() or p.stdout.strip())
    return json.loads(p.stdout)


TORCH_SCRIPT = r"""
import json, sys, time
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
spec = json.loads(sys.argv[1])
g = torch.Generator().manual_seed(0)
args = {}
for name, dtype, shape, rng in spec["params"]:
    if dtype.startswith("i"):
        lo, hi = rng or (0, 9)
        args[name] = torch.randint(int(lo), int(hi) + 1, shape, generator=g, dtype=torch.int32)
    else:
        lo, hi = rng or (-1.0, 1.0)
        args[name] = (torch.rand(shape, generator=g) * (hi - lo) + lo).requires_grad_()
fn = eval("lambda " + ",".join(args) + ": " + spec["expr"])
def best(f, n):
    for _ in range(3):  # warm-up: allocator and kernels
        f()
    t = []
    for _ in range(n):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t) * 1e3
fwd = best(lambda: fn(**args), spec["repeat"])  # grad mode: the same kernels as below
def fb():
    y = fn(**args)
    y.backward(torch.ones_like(y))
both = best(fb, spec["repeat"])
print(json.dumps({"fwd_ms": fwd, "fwd_bwd_ms": both}))
"""


def torch_times(path, op, repeat):
    if op not in TORCH or not os.access("/usr/bin/python3", os.X_OK):
        return None
    spec = {"params": params(path, op), "expr": TORCH[op], "repeat": repeat}
    p = subprocess.run(["/usr/bin/python3", "-c", TORCH_SCRIPT, json.dumps(spec)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print(f"{op}: torch failed: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout)


def op_row(tirc, path, tmp, rounds, repeat):
    op = os.path.splitext(os.path.basename(path))[0]
    g = os.path.join(tmp, op + "_grad.tir")
    p = subprocess.run([tirc, "grad", path, "--func", op, "-o", g], capture_output=True, text=True)
    if p.returncode != 0:
        return f"| {op} | grad failed: {p.stderr.strip().splitlines()[0]} | | | | | | |"
    f_ms, g_ms, f_flops, g_flops = float("inf"), float("inf"), 0, 0
    for _ in range(rounds):
        rf = tirc_bench(tirc, g, op, repeat)
        rg = tirc_bench(tirc, g, op + "_grad", repeat)
        f_ms, g_ms = min(f_ms, rf["min_ms"]), min(g_ms, rg["min_ms"])
        f_flops, g_flops = rf["flops"], rg["flops"]
    t = torch_times(path, op, repeat)
    torch_cols = (f"{t['fwd_ms']:.2f} | {t['fwd_bwd_ms']:.2f} | {t['fwd_bwd_ms'] / t['fwd_ms']:.2f}"
                  if t else "| |")
    print(f"{op}: F {f_ms:.2f} ms, F_grad {g_ms:.2f} ms", file=sys.stderr)
    return (f"| {op} | {f_flops / 1e6:.1f} | {g_flops / 1e6:.1f} | {f_ms:.2f} | {g_ms:.2f} | "
            f"**{g_ms / f_ms:.2f}** | {torch_cols} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tirc", default=find_tirc())
    ap.add_argument("--ops", help="comma-separated subset")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--update", metavar="README")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(ROOT, "bench", "grad_scale", "*.tir")))
    if a.ops:
        keep = set(a.ops.split(","))
        files = [f for f in files if os.path.splitext(os.path.basename(f))[0] in keep]
    lines = [BEGIN, "## Gradients at layer sizes, compiled (`bench/grad_scale.py`)", "",
             f"Generated by `bench/grad_scale.py` ({time.strftime('%Y-%m-%d')}, {a.rounds} "
             f"rounds of {a.repeat} runs). Each `bench/grad_scale/OP.tir` is a layer at a "
             "realistic size; OP and OP_grad (`tirc grad`) are JIT-compiled unscheduled and "
             "timed with one thread (`tirc bench --no-schedule --threads 1`, minimum over "
             "rounds, F and F_grad interleaved). F_grad recomputes the forward values it "
             "needs. PyTorch (CPU, one thread): forward (grad mode, graph recorded), and forward + "
             "backward with autograd (activations saved), on the same shapes; their ratio is "
             "the peer's cost of a backward. Tiny PyTorch times are dominated by its per-op "
             "overhead (tens of microseconds).", "",
             "| op | F MFLOP | F_grad MFLOP | F ms | F_grad ms | F_grad / F | torch fwd ms | "
             "torch fwd+bwd ms | torch (fwd+bwd) / fwd |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            lines.append(op_row(a.tirc, f, tmp, a.rounds, a.repeat))
    lines += ["", END]
    text = "\n".join(lines) + "\n"
    write_section(text, BEGIN, END, a.update)


if __name__ == "__main__":
    main()
