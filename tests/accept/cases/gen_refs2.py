#!/usr/bin/python3
"""Acceptance round 2: writes inputs and NumPy / PyTorch reference outputs of lang_r2.tir and
grads_r2.tir into data/ (files r2_*.npy). Run with /usr/bin/python3 from this folder; the
.npy files are checked in, so the tests need no Python. Every reference is computed here,
independently of tirc, from the meaning of the script (LANGUAGE.md)."""
import math
import os
import numpy as np
import torch

os.makedirs("data", exist_ok=True)
f32, f64 = np.float32, np.float64
rng = np.random.default_rng(20261122)


def save(name, a):
    np.save(os.path.join("data", "r2_" + name + ".npy"), a)


def bf16_bits(a):
    """f32 -> bf16 (round to nearest even) as the raw uint16 bits tirc writes for bf16."""
    return torch.from_numpy(np.asarray(a, f32)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def seqsum(a, axis):
    """Sum in f32, element after element (the order of a block's reduce loop)."""
    a = np.moveaxis(np.asarray(a, f32), axis, -1)
    acc = np.zeros(a.shape[:-1], f32)
    for k in range(a.shape[-1]):
        acc = (acc + a[..., k]).astype(f32)
    return acc


# ---- lang_r2.tir: names ----
A = rng.uniform(-1, 1, (4, 6)).astype(f32)
save("names_A", A)
B = (np.exp(A) - f32(1)).astype(f32)
save("names_B", B)
save("names_exp", seqsum(B, 1))

# ---- lang_r2.tir: prec ----
A = np.array([7, -7, 0, 5, -9, 13], np.int32)
B = np.array([2, 2, -3, -2, 4, 1], np.int32)
save("prec_A", A)
save("prec_B", B)
R = np.stack([A - B - 3, -A * B + 2 * 3 - 1, A // B * 2, A % B % 3, 2 - -A, (A + B) * (A - B) // 4,
              np.full(6, -7 // 2 + (-7 % 2) * 10), A // -3 + A % -3 * 100], 1).astype(np.int32)
save("prec_R", R)
P = np.stack([(~(A < B)) & (A != 0) | (B == 1), (A < B) == (B > A), np.zeros(6, bool)], 1)
save("prec_P", P)

# ---- lang_r2.tir: ctl (n = 3) ----
A = (np.arange(8) + 1).astype(f32)
save("ctl_A", A)
Bc = np.where(np.arange(8) % 2 == 1, A * f32(10), -A).astype(f32)
save("ctl_B", Bc)
save("ctl_C_true", (Bc[0::2] + f32(3)).astype(f32))
save("ctl_C_false", (Bc[1::2] - f32(3)).astype(f32))

# ---- lang_r2.tir: cumprod (scan) ----
X = np.array([[1, 2, 3, 0.5, -1, 2], [0.5, 0.5, 4, 1, 1, -2]], f32)
save("cumprod_X", X)
save("cumprod_Y", np.cumprod(X, 1).astype(f32))

# ---- lang_r2.tir: widx (i64 extents, vectorized(7), thread axes on the CPU) ----
A = rng.uniform(-2, 2, (3, 7)).astype(f32)
save("widx_A", A)
Bw = (A * (10 * np.arange(3)[:, None] + np.arange(7)[None, :]).astype(f32)).astype(f32)
save("widx_B", Bw)
save("widx_S", seqsum(Bw, 1))

# ---- lang_r2.tir: par (n = 37) ----
A = rng.uniform(-1, 1, (37, 5)).astype(f32)
save("par_A", A)
save("par_M", (A + np.arange(5, dtype=f32)[None, :]).min(1).astype(f32))

# ---- lang_r2.tir: tile_sum (n = 3, m = 4) ----
A = rng.uniform(-1, 1, (3, 5)).astype(f32)
save("tile_A", A)
T = (A * f32(2)).astype(f32)
save("tile_T", T.reshape(-1))
save("tile_S", seqsum(T * np.arange(1, 6, dtype=f32)[None, :], 1))

# ---- lang_r2.tir: casts ----
X = np.array([-299.7, -1.5, -0.5, 0.0, 0.49, 1.5, 2.5, 255.9], f32)
L = np.array([-129, -128, 127, 128, 255, 256, -1, 300000], np.int64)
W = np.array([-1, 0, 1, 255, 256, -32768, 32767, -200], np.int16)
V = np.array([0, 1, 65535, 32768, 32767, 40000, 2, 7], np.uint16)
for n, a in dict(X=X, L=L, W=W, V=V).items():
    save("casts_" + n, a)
save("casts_I", X.astype(np.int32))
save("casts_B8", L.astype(np.int8))
save("casts_U8", W.astype(np.uint8))
save("casts_H", X.astype(np.float16))
save("casts_BF", bf16_bits(X))
save("casts_D", X.astype(f64) * f64(1.0000001))
save("casts_Bo", X.astype(bool))
save("casts_S16", V.astype(np.int16))
save("casts_U16", W.astype(np.uint16))
save("casts_LL", W.astype(np.int64) * V.astype(np.int64) - L)
save("casts_F", (X.astype(np.float16).astype(f32) + W.astype(bool).astype(f32) + V.astype(f32)).astype(f32))

# ---- lang_r2.tir: ints ----
A = np.array([7, -7, 10000000000, -10000000001, 0, 9], np.int64)
B = np.array([2, 2, -3, 7, -5, -9], np.int64)
C = np.array([-128, -7, 7, 127, 0, -1], np.int8)
D = np.array([0, 1, 4294967295, 100, 6, 7], np.uint32)
for n, a in dict(A=A, B=B, C=C, D=D).items():
    save("ints_" + n, a)
td = np.array([int(abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1) for a, b in zip(A.tolist(), B.tolist())],
              np.int64)
save("ints_Q", np.stack([A // B, A % B, td, A - td * B], 1))
with np.errstate(over="ignore"):
    save("ints_R", np.stack([C // np.int8(3) + C % np.int8(-4), np.abs(C) + np.sign(C)], 1).astype(np.int8))
save("ints_U", np.stack([D // np.uint32(7), D % np.uint32(7), D - np.uint32(5)], 1).astype(np.uint32))
vi = np.arange(6, dtype=np.int64)
save("ints_M", np.stack([2147483647 // 2 + vi, np.full(6, -2147483647), np.full(6, 127 - 128 + 255),
                         np.full(6, 65535 - 32768), np.abs(vi - 3) * np.sign(2 - vi)], 1).astype(np.int32))

# ---- lang_r2.tir: scal (a = 0.1, k = 10000000000, flag = true, h = 0.5, u = 255) ----
X = np.array([1.5, -2.0, 0.25, 8.0], f64)
save("scal_X", X)
save("scal_Y", X * 0.1 + 255.0)
save("scal_Z", np.int64(10000000000) * np.arange(4, dtype=np.int64) + np.int64(10000000000) // np.int64(-3))
save("scal_H", (np.float16(0.5) * np.arange(4).astype(np.float16) + np.float16(0.5)).astype(np.float16))


# ---- grads_r2.tir: PyTorch vector-Jacobian products ----
def vjp(fn, inputs, cot):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    outs = fn(*ts)
    if not isinstance(outs, tuple):
        outs = (outs,)
    loss = sum((o * torch.tensor(c, dtype=torch.float64)).sum() for o, c in zip(outs, cot))
    loss.backward()
    return [t.grad.numpy().astype(f32) for t in ts]


def unary_all(x, p):
    cols = [x.exp(), x.log(), x.sqrt(), x.rsqrt(), x.sin(), x.cos(), x.tan(), x.tanh(), x.sigmoid(), torch.erf(x),
            x.log1p(), x.expm1(), x.log2(), x.log10(), x ** 2.5, p ** x, x / p]
    return torch.stack(cols, 1)


X = rng.uniform(0.2, 0.9, 6).astype(f32)
Pp = rng.uniform(0.5, 2.0, 6).astype(f32)
G = rng.uniform(-1, 1, (6, 17)).astype(f32)
save("gu_X", X)
save("gu_P", Pp)
save("gu_Ygrad", G)
gx, gp = vjp(unary_all, [X, Pp], [G])
save("gu_Xgrad", gx)
save("gu_Pgrad", gp)


def mlp(x, w1, b1, w2):
    return torch.relu(x @ w1 + b1) @ w2


Xm = rng.uniform(-1, 1, (4, 8)).astype(f32)
W1 = rng.uniform(-1, 1, (8, 16)).astype(f32)
B1 = rng.uniform(-1, 1, 16).astype(f32)
W2 = rng.uniform(-1, 1, (16, 3)).astype(f32)
Gm = rng.uniform(-1, 1, (4, 3)).astype(f32)
for n, a in dict(X=Xm, W1=W1, B1=B1, W2=W2, Ygrad=Gm).items():
    save("gmlp_" + n, a)
for n, g in zip(["X", "W1", "B1", "W2"], vjp(mlp, [Xm, W1, B1, W2], [Gm])):
    save("gmlp_" + n + "grad", g)


def conv2d(i, w):
    return torch.nn.functional.conv2d(i, w, padding=1)


I = rng.uniform(-1, 1, (1, 2, 5, 5)).astype(f32)
Wc = rng.uniform(-1, 1, (3, 2, 3, 3)).astype(f32)
Go = rng.uniform(-1, 1, (1, 3, 5, 5)).astype(f32)
for n, a in dict(I=I, W=Wc, Ograd=Go).items():
    save("gconv_" + n, a)
gi, gw = vjp(conv2d, [I, Wc], [Go])
save("gconv_Igrad", gi)
save("gconv_Wgrad", gw)


def lse(x):
    t = 0.7
    return torch.logsumexp(x / t, 1) * t


Xl = rng.uniform(-1, 1, (3, 5)).astype(f32)
Gl = rng.uniform(-1, 1, 3).astype(f32)
save("glse_X", Xl)
save("glse_Lgrad", Gl)
save("glse_Xgrad", vjp(lse, [Xl], [Gl])[0])


def chain(x):
    y = x * 2
    return y, y * y + x


Xc = rng.uniform(-1, 1, 6).astype(f32)
Gy = rng.uniform(-1, 1, 6).astype(f32)
Gz = rng.uniform(-1, 1, 6).astype(f32)
save("gchain_X", Xc)
save("gchain_Ygrad", Gy)
save("gchain_Zgrad", Gz)
save("gchain_Cgrad", np.array([5, -3, 0, 7, 1, 2], np.int32))  # an int cotangent: no effect
save("gchain_Xgrad", vjp(chain, [Xc], [Gy, Gz])[0])

# ---- lang_r2.tir: fp (f64 precision, f16 / bf16 rounding after every operation) ----
D = np.array([0.3, 1.7, 2.2, 9.1])
H = np.array([1.333, 2.718, 0.1, 7.77], np.float16)
Gt = torch.tensor([1.333, 2.718, 0.1, 7.77]).to(torch.bfloat16)
save("fp_D", D)
save("fp_H", H)
save("fp_G", Gt.view(torch.int16).numpy().view(np.uint16))
verf = np.vectorize(math.erf)
save("fp_E", np.stack([D * 0.1, np.exp(D), D ** (1 / 3), np.sin(D * 1e10), D + 1e-17,
                       np.sqrt(D) * np.tanh(D) + np.log(D) + verf(D)], 1))
h3 = np.float16(3)
save("fp_HH", np.stack([H * H + H, np.exp(H), H / h3 * h3], 1).astype(np.float16))
GG = torch.stack([Gt * Gt + Gt, Gt / torch.tensor(3.0).to(torch.bfloat16)], 1)
save("fp_GG", GG.view(torch.int16).numpy().view(np.uint16))
acc = np.float16(0)
for h in H:
    acc = np.float16(acc + h * np.float16(1000))
save("fp_HS", np.array([acc], np.float16))


# ---- grads_r2.tir: multi, shiftp (s = 2), predred, scan2, ptrel ----
def multi(x):
    y0 = x * x
    y1 = torch.exp(x) ** 2 + x
    y2 = torch.where(x > 0, torch.sqrt(x + 1), -x)
    return torch.stack([y0, y1, y2], 1), y0 + y1 * 2


Xm = rng.uniform(-1, 1, 6).astype(f32)
Gy = rng.uniform(-1, 1, (6, 3)).astype(f32)
Gz = rng.uniform(-1, 1, 6).astype(f32)
save("gmulti_X", Xm)
save("gmulti_Ygrad", Gy)
save("gmulti_Zgrad", Gz)
save("gmulti_Xgrad", vjp(multi, [Xm], [Gy, Gz])[0])


def shiftp(x):
    return x[2:8] * x[3:9]


Xs = rng.uniform(-1, 1, 10).astype(f32)
Gs = rng.uniform(-1, 1, 6).astype(f32)
save("gshift_X", Xs)
save("gshift_Ygrad", Gs)
save("gshift_Xgrad", vjp(shiftp, [Xs], [Gs])[0])


def predred(x):
    mask = torch.tensor([[1.0 if k < i * 2 + 1 else 0.0 for k in range(8)] for i in range(4)], dtype=torch.float64)
    return (x * x * mask).sum(1)


Xp = rng.uniform(-1, 1, (4, 8)).astype(f32)
Gp = rng.uniform(-1, 1, 4).astype(f32)
save("gpred_X", Xp)
save("gpred_Sgrad", Gp)
save("gpred_Xgrad", vjp(predred, [Xp], [Gp])[0])


def scan2(x):
    ys = [x[:, 0]]
    for t in range(1, 5):
        ys.append(torch.tanh(ys[-1] + x[:, t]))
    return torch.stack(ys, 1)


Xq = rng.uniform(-1, 1, (3, 5)).astype(f32)
Gq = rng.uniform(-1, 1, (3, 5)).astype(f32)
save("gscan_X", Xq)
save("gscan_Ygrad", Gq)
save("gscan_Xgrad", vjp(scan2, [Xq], [Gq])[0])


def ptrel(x):
    return torch.where(x > 0, x, 0.1 * x) * torch.minimum(x, torch.tensor(0.5, dtype=torch.float64))


Xr = np.array([-0.9, -0.3, 0.2, 0.45, 0.55, 0.8, -0.05, 0.3], f32)  # no ties at 0 or 0.5
Gr = rng.uniform(-1, 1, 8).astype(f32)
save("gptrel_X", Xr)
save("gptrel_Ygrad", Gr)
save("gptrel_Xgrad", vjp(ptrel, [Xr], [Gr])[0])
