#!/usr/bin/python3
"""Compares tirc results for one zoo operator with the PyTorch reference (zoo_ref.py).

    check.py forward OP DIR   DIR holds in_<param>.npy (every parameter, scalars 0-d) and
                              out_<output>.npy (what tirc computed); compares each output.
    check.py grad OP DIR      DIR holds in_<param>.npy, cot_<output>.npy (the cotangents
                              <output>_grad given to OP_grad) and grad_<param>.npy (the
                              <param>_grad that tirc computed); compares with the
                              vector-Jacobian product from torch.autograd in float64.
    check.py refs ROOT OP...  for each OP, ROOT/OP holds in_<param>.npy and cot_<output>.npy;
                              writes there the reference outputs ref_out_<output>.npy and the
                              vector-Jacobian products ref_grad_<param>.npy (float64), then
                              ref_done: "ok", or why no reference could be computed. One
                              process for the whole zoo: tests/zoo compares in C++ with the
                              same tolerances as compare() below (torch is imported once).
    check.py list             prints the operators that have a reference.

Prints one line per compared array and exits 0 when all match, 1 on a mismatch, 2 on bad
usage (unknown operator, missing files). Needs numpy and torch (/usr/bin/python3).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_ref import REFS  # noqa: E402

# forward: tirc computes in f32 (the interpreter's own arithmetic), the reference in f64.
# grad: tirc runs OP_grad with promote_f64; only f32-rounded literals of the .tir differ.
FWD_RTOL, FWD_ATOL = 1e-4, 1e-5
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-6


def load(dirname, prefix):
    out = {}
    for f in sorted(os.listdir(dirname)):
        if f.startswith(prefix) and f.endswith(".npy"):
            out[f[len(prefix):-4]] = np.load(os.path.join(dirname, f))
    return out


def to_torch(a, requires_grad=False):
    if a.dtype == np.bool_:
        return torch.from_numpy(a.copy())
    if np.issubdtype(a.dtype, np.integer):
        return torch.from_numpy(a.astype(np.int64))
    t = torch.from_numpy(a.astype(np.float64))
    if requires_grad:
        t.requires_grad_(True)
    return t


def compare(label, got, want, rtol, atol):
    """Prints one line; returns True when got matches want elementwise."""
    want = np.asarray(want)
    if tuple(got.shape) != tuple(want.shape):
        print(f"FAIL {label}: shape {tuple(got.shape)} != reference {tuple(want.shape)}")
        return False
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
    err = np.abs(g - w)
    bad = ~(err <= atol * scale + rtol * np.abs(w))
    bad |= np.isnan(g) != np.isnan(w)
    maxerr = float(np.nanmax(err)) if err.size else 0.0
    if bad.any():
        idx = np.argwhere(bad)[0]
        print(f"FAIL {label}: {int(bad.sum())}/{bad.size} elements differ, max abs err {maxerr:.3g}; "
              f"first at {tuple(int(i) for i in idx)}: tirc {g[tuple(idx)]!r} vs reference {w[tuple(idx)]!r}")
        return False
    print(f"ok   {label}: max abs err {maxerr:.3g}")
    return True


def reference_outputs(op, inputs):
    """The reference's outputs {name: ndarray} on the inputs, without autograd."""
    with torch.no_grad():
        return {k: v.numpy() for k, v in REFS[op](**{k: to_torch(v) for k, v in inputs.items()}).items()}


def float_buffers(inputs):
    """The params that get a gradient by default (LANGUAGE.md: every float input buffer)."""
    return [k for k, v in inputs.items() if v.dtype.kind == "f" and v.ndim > 0]


def reference_vjp(op, inputs, cots):
    """{param: VJP} from torch.autograd for every float input buffer (zeros when unused)."""
    tin = {k: to_torch(v, requires_grad=v.dtype.kind == "f") for k, v in inputs.items()}
    float_bufs = float_buffers(inputs)
    ref = REFS[op](**tin)
    if set(cots) != set(ref):
        raise ValueError(f"cotangents given for {sorted(cots)}, reference outputs {sorted(ref)}")
    loss = sum((ref[k] * to_torch(cots[k])).sum() for k in ref if ref[k].requires_grad)
    wrt = [tin[k] for k in float_bufs]
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        g = torch.autograd.grad(loss, wrt, allow_unused=True)
    else:  # no output depends differentiably on any input
        g = [None] * len(wrt)
    return {k: np.zeros(inputs[k].shape) if gk is None else gk.detach().numpy()
            for k, gk in zip(float_bufs, g)}


def write_refs(root, ops):
    for op in ops:
        d = os.path.join(root, op)
        try:
            if op not in REFS:
                raise ValueError(f"no reference for operator '{op}' in examples/ops/ref/zoo_ref.py")
            inputs = load(d, "in_")
            refs = {"ref_out_": reference_outputs(op, inputs),
                    "ref_grad_": reference_vjp(op, inputs, load(d, "cot_"))}
            for prefix, arrays in refs.items():
                for k, v in arrays.items():
                    np.save(os.path.join(d, f"{prefix}{k}.npy"), np.ascontiguousarray(np.asarray(v), dtype=np.float64))
            status = "ok"
        except Exception as e:  # reported by the op's own tests, never fatal for the others
            status = f"the reference raised {type(e).__name__}: {e}"
        with open(os.path.join(d, "ref_done"), "w") as f:
            f.write(status + "\n")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "refs":
        return write_refs(argv[2], argv[3:])
    if len(argv) == 2 and argv[1] == "list":
        print("\n".join(sorted(REFS)))
        return 0
    if len(argv) != 4 or argv[1] not in ("forward", "grad"):
        print(__doc__)
        return 2
    mode, op, d = argv[1:]
    if op not in REFS:
        print(f"error: no reference for operator '{op}' in examples/ops/ref/zoo_ref.py")
        return 2
    inputs = load(d, "in_")
    if mode == "forward":
        outs = load(d, "out_")
        ref = reference_outputs(op, inputs)
        if set(ref) != set(outs):
            print(f"FAIL outputs: tirc wrote {sorted(outs)}, reference has {sorted(ref)}")
            return 1
        ok = all([compare(f"{op} output {k}", outs[k], ref[k], FWD_RTOL, FWD_ATOL) for k in sorted(ref)])
        return 0 if ok else 1

    grads = load(d, "grad_")
    if set(grads) != set(float_buffers(inputs)):
        print(f"FAIL gradient results: tirc produced {sorted(grads)}_grad, contract default is "
              f"every float input buffer {sorted(float_buffers(inputs))}")
        return 1
    want = reference_vjp(op, inputs, load(d, "cot_"))
    ok = all([compare(f"{op} gradient {k}_grad", grads[k], want[k], GRAD_RTOL, GRAD_ATOL)
              for k in sorted(want)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
