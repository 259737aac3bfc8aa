#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider12/outsider12.tir, checked by the zoo's check.py.

    outsider12_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64) and returns a
dict output name -> tensor, written from the peers' definitions (TVM's te.compute / topi ops as
torch.nn.functional, Halide's Funcs with their boundary conditions), not from the .tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


# ---------------------------------------------------------------- TVM test_basic_operation
def tvm_basic_ij_ji(A0, A1):
    return {"B": A0 + A0.T, "C": A0 * 1.0, "D": A0 + A1}


def tvm_basic_rounding(A0):
    return {"Bf": torch.floor(A0), "Bc": torch.ceil(A0), "Bt": torch.trunc(A0), "Br": torch.round(A0)}


def tvm_basic_exp_ji(A0):
    return {"B": A0 + torch.exp(A0.T), "C": torch.log(0.1 + torch.abs(A0 + torch.exp(A0.T)))}


def tvm_basic_cubic(A0, P):
    c = A0 * A0 * A0.T
    return {"Bs": torch.sigmoid(c), "Bt": torch.tanh(c), "Bq": torch.sqrt(P * P * P.T)}


def tvm_basic_pow_abs(A0, S):
    return {"B": torch.pow(torch.abs(A0 * torch.where(S < 0, -1.0, 1.0)), A0.T * 2.0 - 2.0)}


def tvm_basic_mul_ji(A0, A1):
    return {"B": A0 * A0.T, "C": A0 * (A1.T + A0.T)}


def tvm_basic_sum_diag(A0):
    d = (A0 * A0.T).sum(1)
    return {"B": d, "C": (d + 5.0 * 4)[:, None].expand(4, 4)}


def tvm_basic_max_plus5(A0):
    return {"B": (A0[:, :, None] * A0[None, :, :] + 5.0).amax(1)}


def tvm_basic_min_index(A0):
    n = 4
    out = torch.zeros(n, n, dtype=A0.dtype)
    for i in range(n):
        for j in range(n):
            out[i, j] = sum(A0[k, k] - A0[min(j + k, n - 1), j] * A0[i, k] for k in range(n))
    return {"B": out}


def tvm_basic_prod_reducer(A0):
    return {"B": (A0 + A0.T).prod(1)[:, None].expand(4, 4)}


def tvm_basic_tensordot(X):
    a = X + X.flip(0)
    b = X * X.flip(0)
    return {"Y": torch.tensordot(a, b, 1).reshape(1)}


def tvm_basic_div_mod(A0):
    i = torch.arange(6)
    a = A0[i[:, None] // 2, i[None, :] % 3]
    b = A0[i[None, :] // 2, i[:, None] % 3]
    return {"B": a * b + a}


# ---------------------------------------------------------------- TVM test_topi
def tvm_topi_conv_relu_conv(X, W, W1):
    r = F.conv2d(X, W, stride=1, padding=1)
    return {"R1": F.conv2d(F.relu(r), W1)}


def tvm_topi_broadcast_conv(X, W2):
    wb = W2.expand(5, 2, 3, 3)
    return {"R": F.conv2d(X, wb, padding=1), "Bw": wb * 1.0}


def tvm_topi_pool(X):
    return {"Ra": F.avg_pool2d(X, 2, 2), "Rm": F.max_pool2d(X, 2, 2)}


def tvm_topi_resconv_softmax(X, W):
    r = X + F.conv2d(X + F.conv2d(X, W, padding=1), W, padding=1)
    flat = r.reshape(1, 50)
    return {"S": flat.softmax(1), "Ls": flat.log_softmax(1)}


def tvm_topi_concat_split(X, Y, X2):
    s, r = torch.split(X2, 3, 2)
    return {"S": torch.cat((X, Y), 2), "R2": torch.cat((r, s), 2) * 2.0}


def tvm_topi_take_abs(X, I):
    return {"R": X.flatten()[I.abs().clamp(0, 19)]}


def tvm_topi_dense_softmax(X, W):
    e = torch.exp(F.linear(X, W))
    return {"R": e / e.sum(-1, keepdim=True)}


# ---------------------------------------------------------------- TVM test_stride_dilation
def tvm_conv_stride_dilation(X, W, V):
    return {"Y": F.conv2d(X, W, stride=2, dilation=2), "Z": F.conv2d(X, V, stride=3, dilation=3)}


def tvm_maxpool_stride(X):
    return {"Y": F.max_pool2d(X, 3, 2), "Z": F.max_pool2d(X, 1, 3)}


# ---------------------------------------------------------------- relay
def relay_ops(X, A, B, P, T):
    return {
        "C": torch.clamp(X.T, -1.0, 1.0),
        "Mn": X.mean(0),
        "Vr": X.var(0, unbiased=False),
        "Cb": torch.bmm(A, B.transpose(1, 2)),
        "L": (-(torch.log(P) * T).sum() / 2).reshape(1),
    }


# ---------------------------------------------------------------- Halide autodiff.cpp
def halide_scalar(X, Xn, Xl, Yl, Wl):
    x = X
    p = x * x - 2 * x + 5 + 3 / x
    q = (torch.sin(x) + torch.cos(x) + torch.tan(x) + torch.exp(x) + torch.log(x) + torch.sqrt(x)
         + torch.pow(x, 1.5) + torch.pow(torch.tensor(1.5, dtype=x.dtype), x) + torch.tanh(x)
         + 2 * torch.clamp(x, min=5.0) + 3 * torch.clamp(x, min=1.0) + 5 * torch.clamp(x, max=3.0)
         + 7 * torch.clamp(x, max=2.0))
    r = (2 * torch.abs(Xn) + 3 * torch.abs(-Xn) + torch.where(Xn > 0, 2 * Xn, 3 * Xn)
         + torch.where(Xn < 0, 5 * Xn, 7 * Xn) + torch.lerp(Xl, Yl, Wl))
    return {"P": p, "Q": q, "R": r}


def _blur_loss(c, n):
    blur = c[:n] + c[1:n + 1]
    return (blur * blur).sum().reshape(1)


def halide_1d_box_no_clamp(In, Ic):
    return {"L": _blur_loss(In, 2), "Lc": _blur_loss(F.pad(Ic[None, None], (0, 1), mode="replicate")[0, 0], 2)}


def halide_2d_box(In):
    # Halide's input(x, y) is In[x, y]; clamped over x in [0, 7), y in [-1, 6)
    c = F.pad(In.T[None, None], (0, 2, 1, 1), mode="replicate")[0, 0]  # [y + 1, x]
    bx = c[:, 0:5] + c[:, 1:6] + c[:, 2:7]
    by = bx[0:5] + bx[1:6] + bx[2:7]
    return {"L": (by * by).sum().reshape(1)}


def halide_update(In):
    c = F.pad(In[None, None], (0, 1), mode="replicate")[0, 0]
    blur = c[0:3] + c[1:4]
    return {"L": (blur * blur).sum().reshape(1)}


def halide_nonlinear_update(In):
    c = F.pad(In[None, None], (0, 1), mode="replicate")[0, 0]
    return {"L": (c[0:3] * c[0:3] + c[1:4]).sum().reshape(1)}


def halide_rdom_conv(In, K):
    c = F.pad(In[None, None], (0, 1), mode="replicate")
    conv = F.conv1d(c, K[None, None])[0, 0]
    return {"L": (conv * conv).sum().reshape(1)}


def halide_horner_poly(Co):
    x = torch.arange(16, dtype=Co.dtype) / 15.0
    p = torch.zeros(16, dtype=Co.dtype)
    for c in Co:  # Horner: the first coefficient gets the highest power
        p = p * x + c
    return {"L": (p / 16.0).sum().reshape(1)}


def halide_nonlinear_order_rdom(In):
    f = In
    for r in range(2):
        f = f * f + In[r]
    return {"L": f.sum().reshape(1)}


def _lerp_gather(i0, i1):
    fx = torch.clamp(torch.floor(i0), 0.0, 1.0).long()
    wx = i0 - fx.to(i0.dtype)
    return i1.gather(-1, fx) * (1 - wx) + i1.gather(-1, fx + 1) * wx


def halide_linear_resampling(In0, In1, Jn0, Jn1):
    return {"L": _lerp_gather(In0, In1).sum().reshape(1), "Ip": _lerp_gather(Jn0, Jn1)}


def halide_sparse_update(In):
    return {"O": torch.stack([In[0], In[1] * 0.0, 2.0 * In[1]])}


def halide_histogram(Ix, K):
    h = torch.zeros(4, dtype=K.dtype).index_add(0, Ix.clamp(0, 3), K[:4])
    return {"L": (h * torch.arange(1, 5, dtype=K.dtype)).sum().reshape(1)}


def halide_multi_histogram(Ix, K):
    h = torch.zeros(4, dtype=K.dtype)
    for _ in range(10):
        h = h.index_add(0, Ix.clamp(0, 3), K)
    return {"L": (h * torch.arange(1, 5, dtype=K.dtype)).sum().reshape(1)}


def halide_rdom_update(In):
    z = In[0] * 0.0
    return {"O": torch.stack([In[0], In[0], In[1], z, z])}


def halide_boundaries(In):
    def loss(idx):
        c = torch.stack([In[i] if i is not None else In[0] * 0.0 for i in idx])
        return (c[0:3] + c[1:4]).sum().reshape(1)

    # the input extended over x = 0..3 by each boundary condition (width 2)
    return {"Le": loss([0, 1, 1, 1]), "Lc": loss([0, 1, None, None]), "Lr": loss([0, 1, 0, 1]),
            "Lm": loss([0, 1, 1, 0]), "Li": loss([0, 1, 0, 1])}


def halide_second_order(X):
    return {"P": X * X + 3.0 * X + 4.0}


def halide_second_order_conv(In, Tg, K):
    c = F.pad(In[None, None], (1, 1), mode="replicate")
    conv = F.conv1d(c, K[None, None])[0, 0][:9]
    return {"L": ((conv - Tg[:9]) ** 2).sum().reshape(1)}


def halide_tuple(In):
    t0, t1 = In[0:2] + 1.0, In[1:3] + 1.0
    return {"L": (t0 + t1).sum().reshape(1)}


def halide_floor_ceil(In, Dn, U):
    x = torch.arange(8, dtype=In.dtype) / 4.0
    return {"O": In[torch.ceil(x).long()] + In[torch.floor(x).long()],
            "D": Dn[:8].reshape(2, 4).sum(1), "Up": U.repeat_interleave(4)}


def halide_transpose(In, Tg, Iv):
    o = torch.outer(torch.arange(1, 3, dtype=Iv.dtype), Iv)
    return {"L": ((In.T - Tg) ** 2).sum().reshape(1), "Lp": (o * o).sum().reshape(1)}


def halide_rdom_predicate(In):
    i = torch.arange(7)
    m = ((i[:, None] - 3) ** 2 + (i[None, :] - 3) ** 2) <= 10
    return {"C": torch.where(m, In * 2.0, In)}


def halide_reverse(In):
    return {"L": (In.flip(0) * torch.arange(1, 6, dtype=In.dtype)).sum().reshape(1)}


def halide_diagonal(In, Dg):
    f = torch.diag(In[0:4] + In[1:5])
    return {"L": f.sum().reshape(1), "O": torch.diagonal(Dg) * torch.arange(1, 5, dtype=Dg.dtype)}


def halide_select_guard(In):
    x1 = torch.arange(1, 3, dtype=In.dtype)
    pos = In > 0
    safe = torch.where(pos, In, torch.ones_like(In))  # the usual double-where guard
    return {"O": torch.where(pos, x1 / safe, In) + torch.where(pos, torch.sqrt(safe), torch.ones_like(In))
            + torch.where(pos, torch.log(safe), 3.0 * In)}


def halide_param(Pm, Bf):
    return {"F": Pm * Pm * 2.0 * Bf[0]}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
