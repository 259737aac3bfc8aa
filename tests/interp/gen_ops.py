"""Reference values for the interpreter's scalar semantics, computed by NumPy (and PyTorch for
bf16 and for the intrinsics NumPy lacks: sigmoid, erf, rsqrt).

Usage: /usr/bin/python3 gen_ops.py OUTDIR
Writes, for every dtype DT: a_DT.npy, b_DT.npy (operands), e_DT.npy (pow exponents),
and DT_OP.npy for every operator/intrinsic OP; cast_DT_to_DT2.npy for casts of a_DT.
bf16 arrays are stored as their raw uint16 bits (runtime/npy.h).
"""
import os
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)

FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
INTS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
        "u8": np.uint8, "u16": np.uint16, "u32": np.uint32}

float_vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0, 1e-3, 100.0, 1e4,
              np.inf, -np.inf, np.nan, 0.1, -3.7, 0.7, -0.3, 5.5, -1e-4, 20.0, -20.0, 1e30, 6e4]


def save(name, arr):
    np.save(os.path.join(out, name + ".npy"), arr)


def float_operands(t):
    info = np.finfo(t)
    a = np.array(float_vals + [float(info.max), float(info.tiny), -float(info.max)], dtype=np.float64).astype(t)
    b = np.roll(a, 5).copy()
    b[0], b[1], b[2] = 3.0, -0.0, np.nan   # a few deliberate pairs
    return a, b


def int_operands(t):
    info = np.iinfo(t)
    base = [0, 1, -1, 7, -7, 3, -3, 2, 100, -100, 37, -37, 5, 64, -64, 9]
    vals = [v for v in base if info.min <= v <= info.max]
    vals += [int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1]
    a = np.array(vals, dtype=np.int64).astype(t)
    b = np.roll(a, 3).copy()
    b[b == 0] = 3  # division by zero is tested separately
    return a, b


def trunc_div(a, b, t):
    bits = np.dtype(t).itemsize * 8
    r = []
    for x, y in zip(a.tolist(), b.tolist()):
        q = abs(x) // abs(y)
        if (x < 0) != (y < 0):
            q = -q
        r.append(q)
    m = (1 << bits)
    r = [v % m for v in r]
    if np.issubdtype(t, np.signedinteger):
        r = [v - m if v >= m // 2 else v for v in r]
    return np.array(r, dtype=object).astype(t)


def trunc_mod(a, b, t):
    r = []
    for x, y in zip(a.tolist(), b.tolist()):
        q = abs(x) % abs(y)
        r.append(-q if x < 0 else q)
    return np.array(r, dtype=np.int64).astype(t)


def float_ops(a, b, e, tt, t):
    """Reference results; tt: torch tensors of a and b in the same dtype."""
    ta, tb = tt
    r = {
        "add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
        "floordiv": np.floor_divide(a, b), "mod": np.remainder(a, b),
        "min": np.minimum(a, b), "max": np.maximum(a, b), "neg": -a,
        "eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
        "exp": np.exp(a), "log": np.log(a), "log2": np.log2(a), "log10": np.log10(a),
        "log1p": np.log1p(a), "expm1": np.expm1(a), "sqrt": np.sqrt(a),
        "sin": np.sin(a), "cos": np.cos(a), "tan": np.tan(a), "tanh": np.tanh(a),
        "abs": np.abs(a), "floor": np.floor(a), "ceil": np.ceil(a), "round": np.round(a),
        "trunc": np.trunc(a), "sign": np.sign(a), "pow": np.power(a, e),
        "truncdiv": np.trunc(a / b), "truncmod": np.fmod(a, b),
        # f16: computed in float32, rounded once (what torch does on GPUs; CPU lacks kernels).
        "sigmoid": torch.sigmoid(ta.float() if t == np.float16 else ta).numpy().astype(t),
        "erf": torch.erf(ta.float() if t == np.float16 else ta).numpy().astype(t),
        "rsqrt": torch.rsqrt(ta.float() if t == np.float16 else ta).numpy().astype(t),
    }
    return r


def torch_ops_bf16(a32, b32, e32):
    ta = torch.tensor(a32).to(torch.bfloat16)
    tb = torch.tensor(b32).to(torch.bfloat16)
    te = torch.tensor(e32).to(torch.bfloat16)
    r = {
        "add": ta + tb, "sub": ta - tb, "mul": ta * tb, "div": ta / tb,
        "min": torch.minimum(ta, tb), "max": torch.maximum(ta, tb), "neg": -ta,
        "exp": torch.exp(ta), "log": torch.log(ta), "sqrt": torch.sqrt(ta), "tanh": torch.tanh(ta),
        "abs": torch.abs(ta), "floor": torch.floor(ta), "ceil": torch.ceil(ta), "round": torch.round(ta),
        "trunc": torch.trunc(ta), "sigmoid": torch.sigmoid(ta), "pow": torch.pow(ta, te),
        "sin": torch.sin(ta), "cos": torch.cos(ta), "erf": torch.erf(ta),
    }
    return {k: v.view(torch.int16).numpy().view(np.uint16) for k, v in r.items()}, \
        ta.view(torch.int16).numpy().view(np.uint16), tb.view(torch.int16).numpy().view(np.uint16), \
        te.view(torch.int16).numpy().view(np.uint16)


def saturating_cast(x, t):
    """Documented float -> int rule: trunc toward zero, NaN -> 0, saturate."""
    if t == np.bool_:
        return x != 0
    info = np.iinfo(t)
    x = x.astype(np.float64)
    r = []
    for v in x.tolist():
        if v != v:
            r.append(0)
            continue
        v = np.trunc(v)
        r.append(int(min(max(v, info.min), info.max)) if np.isfinite(v) else (info.max if v > 0 else info.min))
    return np.array(r, dtype=object).astype(t)


ALL = dict(FLOATS)
ALL.update(INTS)
ALL["bool"] = np.bool_

operands = {}
for name, t in FLOATS.items():
    a, b = float_operands(t)
    e = np.array([2, 3, 0.5, -1, 1.5, 2] * 6, dtype=t)[: len(a)]
    save(f"a_{name}", a)
    save(f"b_{name}", b)
    save(f"e_{name}", e)
    operands[name] = a
    ops = float_ops(a, b, e, (torch.tensor(a), torch.tensor(b)), t)
    for op, v in ops.items():
        save(f"{name}_{op}", np.asarray(v))

a32, b32 = float_operands(np.float32)
e32 = np.array([2, 3, 0.5, -1, 1.5, 2] * 6, dtype=np.float32)[: len(a32)]
ops, abits, bbits, ebits = torch_ops_bf16(a32, b32, e32)
save("a_bf16", abits)
save("b_bf16", bbits)
save("e_bf16", ebits)
for op, v in ops.items():
    save(f"bf16_{op}", v)

for name, t in INTS.items():
    a, b = int_operands(t)
    e = (np.abs(b.astype(np.int64)) % 4).astype(t)
    save(f"a_{name}", a)
    save(f"b_{name}", b)
    save(f"e_{name}", e)
    operands[name] = a
    r = {
        "add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b, "mod": a % b,
        "min": np.minimum(a, b), "max": np.maximum(a, b), "neg": np.negative(a),
        "eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
        "abs": np.abs(a), "sign": np.sign(a), "pow": np.power(a, e),
        "truncdiv": trunc_div(a, b, t), "truncmod": trunc_mod(a, b, t),
    }
    for op, v in r.items():
        save(f"{name}_{op}", np.asarray(v).astype(t) if op not in ("eq", "ne", "lt", "le", "gt", "ge") else v)

bools = np.array([False, True, True, False])
save("a_bool", bools)
operands["bool"] = bools

# Casts between every pair of dtypes (bf16 excluded here: tested through torch above).
for src, a in operands.items():
    for dst, t in ALL.items():
        if np.issubdtype(np.asarray(a).dtype, np.floating) and dst in INTS:
            v = saturating_cast(a, t)
        elif dst == "bool":
            v = a != 0
        else:
            v = np.asarray(a).astype(t)  # int -> int wraps; -> float rounds to nearest even
        save(f"cast_{src}_to_{dst}", np.asarray(v))
print("ok")
