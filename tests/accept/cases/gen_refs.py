#!/usr/bin/python3
"""Writes the inputs and the NumPy/PyTorch reference outputs of the acceptance cases into
data/. Run with /usr/bin/python3 from this folder; the .npy files are checked in, so the
tests need no Python. Every reference is computed independently of tirc."""
import math
import os
import numpy as np
import torch

os.makedirs("data", exist_ok=True)


def save(name, a):
    np.save(os.path.join("data", name + ".npy"), a)


f32 = np.float32
rng = np.random.default_rng(1234)

# ---- intrinsics.tir: unary ----
X = np.linspace(0.1, 0.9, 16).astype(f32)
save("unary_X", X)
x = X.astype(np.float64)
erf = np.vectorize(math.erf)
cols = [np.exp(x), np.log(x), np.log2(x), np.log10(x), np.log1p(x), np.expm1(x), np.sqrt(x),
        1 / np.sqrt(x), np.sin(x), np.cos(x), np.tan(x), np.tanh(x), 1 / (1 + np.exp(-x)),
        erf(x), np.abs(X - f32(0.5)), np.floor(X * f32(10) - f32(4.5)),
        np.ceil(X * f32(10) - f32(4.5)), np.round(X * f32(10)), np.trunc(X * f32(10) - f32(4.5)),
        np.sign(X - f32(0.5)), x ** 1.5, np.where(X > f32(0.5), np.minimum(X, f32(0.7)),
                                                   np.maximum(X, f32(0.3)))]
save("unary_Y", np.stack([np.asarray(c, dtype=np.float64) for c in cols], 1).astype(f32))

# ---- intrinsics.tir: intdiv ----
A = np.array([7, -7, 7, -7, 0, 13, -13, 5], np.int32)
B = np.array([2, 2, -2, -2, 3, -4, 4, -5], np.int32)
save("intdiv_A", A)
save("intdiv_B", B)
tq = np.trunc(A / B).astype(np.int32)
save("intdiv_Q", np.stack([A // B, A % B, tq, A - tq * B], 1).astype(np.int32))

# ---- intrinsics.tir: literals ----
X = np.array([1.0, np.nan, -2.0, 3.0], f32)
save("literals_X", X)
vi = np.arange(4)
Y = np.zeros((4, 8), f32)
Y[:, 0] = f32(1e-3)
Y[:, 1] = 2.5e4
Y[:, 2] = vi
Y[:, 3] = np.where(np.isnan(X), 0.0, -np.inf)
Y[:, 4] = np.where(vi < 2, np.nan, np.finfo(f32).max)
Y[:, 5] = np.finfo(f32).min
Y[:, 6] = vi * 0.5
Y[:, 7] = vi * 3
save("literals_Y", Y)
save("literals_L", (vi * 3000000000).astype(np.int64))
save("literals_Bo", (vi % 2).astype(bool))

# ---- dtypes.tir ----
H = np.array([0.5, -1.25, 3.0, 100.0, -0.001, 7.75], np.float16)
I8 = np.array([-128, -1, 0, 1, 100, 127], np.int8)
U8 = np.array([0, 1, 2, 128, 254, 255], np.uint8)
Bb = np.array([True, False, True, False, True, True])
L = np.array([-(2 ** 40), -5, 0, 11, 10, 2 ** 40], np.int64)
D = np.array([1.0, -2.0, 0.1, 1e10, -1e-10, 3.0], np.float64)
for n, a in [("H", H), ("I8", I8), ("U8", U8), ("B", Bb), ("L", L), ("D", D)]:
    save("dtypes_" + n, a)
save("dtypes_Hs", (H * np.float16(2) + np.float16(1)).astype(np.float16))
# bf16: round the f16 value (exact in f32) to bf16, add 0.5 in f32, round again
def to_bf16(a):
    b = np.asarray(a, f32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return b
def bf16_val(bits):
    return (bits.astype(np.uint32) << 16).view(f32)
bh = bf16_val(to_bf16(H.astype(f32)))
save("dtypes_Bf", to_bf16(bh + f32(0.5)))
save("dtypes_Iu", (U8.astype(np.uint32) * 3 + 1).astype(np.uint32))
save("dtypes_Lo", (L * 2 + I8.astype(np.int64)).astype(np.int64))
save("dtypes_Df", D / 3.0 + Bb.astype(np.float64))
save("dtypes_Bo", (Bb & ~(L > 10)) | (U8 == 255))

# ---- symbolic.tir ----
n = 3
A = rng.standard_normal((n, 2 * n)).astype(f32)
save("scale_A", A)
Bs = (A * f32(0.5) + f32(n)).astype(f32)
save("scale_B", Bs)
save("scale_S", Bs.astype(np.float64).sum(1).astype(f32))

# ---- structure.tir ----
A = rng.standard_normal((8, 8)).astype(f32)
save("inplace_A", A)
Bm = A.copy()
iu = np.triu_indices(8, 1)
Bm[iu] *= f32(10)
save("inplace_B", Bm)
save("inplace_RowSum", Bm.astype(np.float64).sum(1).astype(f32))
X = rng.standard_normal((4, 10)).astype(f32)
save("cumsum_X", X)
save("cumsum_Y", np.cumsum(X.astype(np.float64), 1).astype(f32))
A = rng.standard_normal((4, 16)).astype(f32)
save("nested_A", A)
save("nested_B", (A.astype(np.float64) ** 2).sum(1).astype(f32))
A = rng.standard_normal(10).astype(f32)
save("padded_A", A)
save("padded_B", A + f32(1))
T = rng.standard_normal((10, 3)).astype(f32)
Idx = np.array([9, 0, 3, 3, 7], np.int32)
save("gather_T", T)
save("gather_Idx", Idx)
save("gather_O", T[Idx])
Xc = rng.standard_normal(12).astype(f32)
W = rng.standard_normal(3).astype(f32)
save("conv1d_X", Xc)
save("conv1d_W", W)
xp = np.pad(Xc.astype(np.float64), 1)
save("conv1d_Y", np.array([sum(xp[i + k] * W[k] for k in range(3)) for i in range(12)], f32))

# ---- syntax_kitchen.tir: compound, bindings ----
A = np.array([0.1, -2.0, 0.7, 3.0, -0.5, 0.0, 1.2, -1.0, 0.3, 0.9], f32)
I = np.array([-10, -3, 0, 1, 2, 5, 8, 9, 15, 30], np.int32)
save("compound_A", A)
save("compound_I", I)
b = np.ones(10, f32)
b = b + A; b = b - f32(0.25); b = b * f32(2); b = np.maximum(b, f32(-1)); b = np.minimum(b, f32(2.5))
save("compound_B", b.astype(f32))
j = I.copy(); j = j + 3; j = j * 2; j = j - I; j = np.maximum(j, 4); j = np.minimum(j, 20)
save("compound_J", j.astype(np.int32))
A = rng.standard_normal(12).astype(f32)
save("bindings_A", A)
save("bindings_B", A.reshape(3, 4))
save("bindings_H", A.reshape(6, 2).sum(1).astype(f32))
save("bindings_M", A.reshape(4, 3).max(0))

# ---- grads.tir: torch references for a few gradients ----
torch.manual_seed(0)
X = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
G = torch.randn(4, 7, dtype=torch.float64)
torch.softmax(X, 1).backward(G)
save("softmax_X", X.detach().numpy().astype(f32))
save("softmax_Ygrad", G.numpy().astype(f32))
save("softmax_Xgrad", X.grad.numpy().astype(f32))

T = torch.randn(10, 3, dtype=torch.float64, requires_grad=True)
Idx = torch.tensor([9, 0, 3, 3, 7])
Og = torch.randn(5, 3, dtype=torch.float64)
(T[Idx] * 2.0).backward(Og)
save("ggather_T", T.detach().numpy().astype(f32))
save("ggather_Idx", Idx.numpy().astype(np.int32))
save("ggather_Ograd", Og.numpy().astype(f32))
save("ggather_Tgrad", T.grad.numpy().astype(f32))

X = torch.randn(10, 10, dtype=torch.float64, requires_grad=True)
V = torch.randn(10, dtype=torch.float64, requires_grad=True)
Dg = torch.randn(10, dtype=torch.float64)
Mg = torch.randn(10, dtype=torch.float64)
D = torch.diagonal(X) ** 2
M = V * V.flip(0)
(D * Dg).sum().add((M * Mg).sum()).backward()
for n, t in [("X", X.detach()), ("V", V.detach()), ("Dgrad", Dg), ("Mgrad", Mg),
             ("Xgrad", X.grad), ("Vgrad", V.grad)]:
    save("gdiag_" + n, t.numpy().astype(f32))

X = torch.randn(8, dtype=torch.float64, requires_grad=True)
Yg = torch.randn(8, dtype=torch.float64)
ys = [X[0]]
for t in range(1, 8):
    ys.append(ys[-1] * 0.5 + X[t] * X[t])
(torch.stack(ys) * Yg).sum().backward()
save("gcarried_X", X.detach().numpy().astype(f32))
save("gcarried_Y", torch.stack(ys).detach().numpy().astype(f32))
save("gcarried_Ygrad", Yg.numpy().astype(f32))
save("gcarried_Xgrad", X.grad.numpy().astype(f32))


# ---- semantics.tir ----
X = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999], f32)
I = np.array([2147483647, -5], np.int32)
U = np.array([250, 3], np.uint8)
save("sem_X", X)
save("sem_I", I)
save("sem_U", U)
save("sem_R", np.round(X).astype(f32))
with np.errstate(over="ignore"):
    save("sem_J", (I + np.int32(1)).astype(np.int32))
    save("sem_V", (U + np.uint8(10)).astype(np.uint8))
save("sem_K", np.full(2, np.int8(-7) // np.int8(2), np.int8))
print("ok")
