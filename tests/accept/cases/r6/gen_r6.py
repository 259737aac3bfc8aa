# Inputs and NumPy / PyTorch references of the outsider round 6 tests
# (tests/accept/outsider_r6_test.cpp), written as a user would: run with /usr/bin/python3 from
# this folder. Float references are computed in f64 and rounded once to the dtype; integer
# references are exact (Python integers, wrapped as NumPy wraps).
import math
import re

import numpy as np
import torch

FLOATS = {'f16': np.float16, 'f32': np.float32, 'f64': np.float64}
INTS = {'i8': np.int8, 'i16': np.int16, 'i32': np.int32, 'i64': np.int64,
        'u8': np.uint8, 'u16': np.uint16, 'u32': np.uint32}


def save_bf16(path, x64):
    """bf16 as tirc reads and writes it: the raw bits with descr '<u2'."""
    b = torch.tensor(np.asarray(x64, dtype=np.float64), dtype=torch.float64).to(torch.bfloat16)
    np.save(path, b.view(torch.int16).numpy().view(np.uint16))


def bf16_round(x64):
    b = torch.tensor(np.asarray(x64, dtype=np.float64), dtype=torch.float64).to(torch.bfloat16)
    return b.to(torch.float64).numpy()


# ---- every float intrinsic of LANGUAGE.md in every float dtype (intr.tir written by the test)
UNARY = ['exp', 'log', 'log2', 'log10', 'log1p', 'expm1', 'sqrt', 'rsqrt', 'sin', 'cos', 'tan',
         'tanh', 'sigmoid', 'erf', 'abs', 'floor', 'ceil', 'round', 'trunc', 'sign']
x = np.array([-3.7, -1.5, -0.5, -0.0, 0.25, 0.5, 1.5, 2.5, 3.49, 7.9, 100.0, -100.0])
p = np.abs(x) + 0.01


def intr_ref(xd, pd):
    with np.errstate(all='ignore'):
        f = {'exp': np.exp(xd), 'log': np.log(pd), 'log2': np.log2(pd), 'log10': np.log10(pd),
             'log1p': np.log1p(xd), 'expm1': np.expm1(xd), 'sqrt': np.sqrt(pd), 'rsqrt': 1 / np.sqrt(pd),
             'sin': np.sin(xd), 'cos': np.cos(xd), 'tan': np.tan(xd), 'tanh': np.tanh(xd),
             'sigmoid': 1 / (1 + np.exp(-xd)), 'erf': np.array([math.erf(v) for v in xd]),
             'abs': np.abs(xd), 'floor': np.floor(xd), 'ceil': np.ceil(xd), 'round': np.round(xd),
             'trunc': np.trunc(xd), 'sign': np.sign(xd)}
        rows = [f[n] for n in UNARY]
        rows += [np.power(pd, xd), np.minimum(xd, pd - 1), np.maximum(xd, -xd * 0.5), np.where(xd > 0, xd, pd)]
    return np.array(rows)


for t, nt in FLOATS.items():
    xt, pt = x.astype(nt), p.astype(nt)
    np.save(f'intr_x_{t}.npy', xt)
    np.save(f'intr_p_{t}.npy', pt)
    with np.errstate(all='ignore'):
        np.save(f'intr_y_{t}.npy', intr_ref(xt.astype(np.float64), pt.astype(np.float64)).astype(nt))
xb, pb = bf16_round(x), bf16_round(p)
save_bf16('intr_x_bf16.npy', xb)
save_bf16('intr_p_bf16.npy', pb)
save_bf16('intr_y_bf16.npy', intr_ref(xb, pb))

# ---- integer operators of every integer dtype (int.tir written by the test)
for t, nt in INTS.items():
    info = np.iinfo(nt)
    s = info.min < 0
    a = np.array([info.min, info.max, 0, 1, -1 if s else 2, 7, -7 if s else 9, 13, info.min + 1,
                  info.max - 1, 100 if info.max >= 100 else 3, 5], dtype=nt)
    b = np.array([3, -3 if s else 3, 5, -1 if s else 1, 2, -2 if s else 2, 3, -5 if s else 5, 7, 10,
                  -7 if s else 7, 5], dtype=nt)
    np.save(f'int_a_{t}.npy', a)
    np.save(f'int_b_{t}.npy', b)
    bits = 8 * np.dtype(nt).itemsize

    def wrap(v):
        return ((int(v) - int(info.min)) % (1 << bits)) + int(info.min)

    def tdiv(u, w):
        q = abs(int(u)) // abs(int(w))
        return q if (int(u) >= 0) == (int(w) > 0) else -q

    rows = []
    for u, w in zip(a, b):
        u, w = int(u), int(w)
        q = tdiv(u, w)
        rows.append([u // w, u % w, q, u - w * q, abs(u), (u > 0) - (u < 0), min(u, w), max(u, w),
                     u * w + u, u - w, -u, u * 3 if u < w else w // 2])
    y = np.array([[wrap(v) for v in r] for r in rows], dtype=object).T.astype(np.int64)
    np.save(f'int_y_{t}.npy', np.array([[wrap(v) for v in row] for row in y.tolist()]).astype(nt))
    z = np.stack([a < b, (a >= b) | (a == 0), a.astype(bool), a == b], axis=1)
    np.save(f'int_z_{t}.npy', z)

# ---- casts from every dtype to every dtype (cast_SRC.tir written by the test). Semantics as
# NumPy's astype where it is defined; float -> int truncates toward zero and saturates, NaN -> 0
# (LANGUAGE.md is silent; docs/interp.md); int -> int wraps; -> bool is `!= 0`.
vals = [0, 1, -1, 2.5, -2.5, 3.5, 127.6, 128, 255.5, 256, -129, 65504, 65520, 70000, 3e9, -3e9]
fvals = vals + [float('nan'), float('inf'), float('-inf')]
ALL = ['bool', 'i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u32', 'f16', 'bf16', 'f32', 'f64']
NT = {'bool': np.bool_, **INTS, **FLOATS}


def source(t):
    if t == 'bool':
        return np.array(vals, dtype=np.float64).astype(bool)
    if t == 'bf16':
        return bf16_round(fvals)
    if t in FLOATS:
        with np.errstate(all='ignore'):
            return np.array(fvals, dtype=np.float64).astype(NT[t])
    info = np.iinfo(NT[t])
    return np.array([((int(math.trunc(v)) - int(info.min)) % (int(info.max) - int(info.min) + 1)) + int(info.min)
                     for v in vals]).astype(NT[t])


def cast(src, d):
    if d == 'bool':
        return src != 0
    if d == 'bf16':
        return bf16_round(src.astype(np.float64))
    if d in FLOATS:
        with np.errstate(all='ignore'):
            return src.astype(np.float64).astype(NT[d]) if src.dtype.kind != 'f' else src.astype(NT[d])
    info = np.iinfo(NT[d])
    out = []
    for v in src:
        if src.dtype.kind == 'f':
            v = float(v)
            if math.isnan(v):
                out.append(0)
                continue
            v = max(min(math.trunc(v) if math.isfinite(v) else v, int(info.max)), int(info.min))
            out.append(int(v))
        else:
            out.append(((int(v) - int(info.min)) % (int(info.max) - int(info.min) + 1)) + int(info.min))
    return np.array(out).astype(NT[d])


for s in ALL:
    src = source(s)
    if s == 'bf16':
        save_bf16('cast_in_bf16.npy', src)
    else:
        np.save(f'cast_in_{s}.npy', src)
    for d in ALL:
        r = cast(src if s != 'bf16' else src.astype(np.float64), d)
        if d == 'bf16':
            save_bf16(f'cast_{s}_to_{d}.npy', r)
        else:
            np.save(f'cast_{s}_to_{d}.npy', r)

# ---- the same scripts with a comment or a newline between every two tokens (LANGUAGE.md:
# "Comments: # to end of line", "Newlines are white space"); `max=` / `min=` are split too.
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+|'
                   r'[A-Za-z_]\w*|->|\+=|-=|\*=|//|<=|>=|==|!=|&&|\|\||\S')


def commented(text):
    toks = [t for t in TOKEN.findall(text) if not t.startswith('#')]
    out = []
    for k, t in enumerate(toks):
        out.append(t)
        out.append(' # c%d\n' % k if k % 2 == 0 else '\n  ')
    return ''.join(out)


for src, dst in [('../../../../examples/matmul.tir', 'commented_matmul.tir'),
                 ('../../../../examples/conv2d.tir', 'commented_conv2d.tir'),
                 ('../../../../examples/softmax.tir', 'commented_softmax.tir'),
                 ('kitchen.tir', 'commented_kitchen.tir')]:
    with open(src) as f, open(dst, 'w') as g:
        g.write(commented(f.read()))
