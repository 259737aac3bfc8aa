#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider5/outsider5.tir, checked by the zoo's check.py.

    outsider5_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors, scalars as 0-d tensors) and
returns a dict output name -> tensor, written from the PyTorch definitions, not from the .tir.
Casts between float types are identities here (the gradients are compared in f64).
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def mm_split(A, B, Bias):
    return {"C": A @ B + Bias}


def fused_tail(X):
    y = torch.tanh(X) * X
    return {"Y": y, "S": (X * X * y).sum(1)}


def offset_loops(X, W):
    return {"Y": (torch.exp(X - W) * W).sum(1)}


def nested_scope(X):
    return {"Y": (X - X.mean(1, keepdim=True)) ** 2}


def lets(s, X, W):
    w = torch.roll(W, -2)
    t = X * w * 0.5 + s
    u = torch.sin(t) * t
    return {"Y": u * u + X}


def ifelse_swap(X, Z):
    c = X > Z
    return {"A": torch.where(c, X * Z, torch.exp(Z)), "B": torch.where(c, X - Z, X * Z * 2.0)}


def compound_chain(X, W, Z):
    y = X * W - Z * Z
    y = torch.maximum(y, torch.full_like(y, -0.25))
    return {"Y": torch.minimum(y, X.flip(0))}


def compound_block(X, W):
    y = X * W - X * X
    return {"Y": torch.maximum(y, W * 0.5) + 1.0}


def scratch_tile(X, W):
    t = X * W
    return {"Y": torch.sqrt((t * t).sum(1) + 1.0)}


def out_readback(X):
    s = X.sum(1)
    return {"S": s * s, "Y": X * s[:, None]}


def f16_dot(A, B):
    return {"Y": torch.tanh(A @ B) * A[:, 0]}


def bf16_mix(X, W):
    return {"Y": torch.log(X * (W * W + 1.0)) * X}


def f64_intrin(X):
    x = X
    return {"Y": torch.sin(x) * torch.cos(x * 2.0) + torch.tan(x) - torch.log2(x)
            + torch.log10(x + 1.0) * torch.log1p(x) + torch.expm1(x * 0.5) * torch.erf(x)}


def bool_mask(X, M, I):
    y = torch.where(M, X[I] * X, -X) + torch.where(M[I] & ~M, X * 3.0, torch.zeros_like(X))
    return {"Y": y}


def pow_neg(X, P):
    return {"Y": X ** 3 - X ** 2 * 0.5 + (X * X + 1.0) ** -1.0 + P ** 1.5}


def piecewise(X):
    x = X
    c = x.clamp(-1.5, 2.0)
    inner_neg = torch.where(x < -1.0, -x, torch.sign(x) * x * c)
    inner_pos = torch.where(x > 2.5, torch.trunc(x) * x, torch.round(x * 2.0) + c * x)
    return {"Y": torch.where(x < -2.0, x * x, torch.where(x < 0.0, inner_neg, inner_pos))}


def trunc_index(X):
    i = torch.arange(10)
    a = torch.div(i - 3, 2, rounding_mode="trunc") + 3
    b = torch.fmod(i - 5, 4) + 4
    return {"Y": X[a] * X[b] + X[:10]}


def gconv_bias_relu(X, W, B):
    return {"Y": torch.relu(F.conv2d(X[None], W, B, groups=2)[0])}


def conv_asym(X, W):
    xp = F.pad(X, (0, 2, 1, 0))  # (left, right, top, bottom)
    return {"Y": F.conv2d(xp[None], W)[0]}


def avgpool_excl(X):
    return {"Y": F.avg_pool2d(X[None], 3, stride=2, padding=1, count_include_pad=False)[0]}


def maxpool_clamp(X):
    return {"Y": F.max_pool2d(X[None, None], 2, stride=2, padding=1)[0, 0]}


def adaptive_max(X):
    return {"Y": F.adaptive_max_pool2d(X[None], (2, 4))[0]}


def softmax_axis0(X):
    return {"Y": torch.softmax(X, 0)}


def logsm_nll(X, T):
    ls = torch.log_softmax(X, 1)
    return {"LS": ls, "L": F.nll_loss(ls, T).reshape(1)}


def cumsum_axis0(X, W):
    return {"Y": torch.cumsum(X * W, 0)}


def argmax_top1(X, V):
    m, a = X.max(1)
    return {"M": m, "A": a.to(torch.int32), "G": V[a] * m[:, None]}


def einsum3r(A, B, C):
    return {"Y": torch.einsum("aijk,jkl,l->ai", A, B, C)}


def bmm_bcast(A, B):
    return {"C": torch.matmul(A, B)}


def sqdist(X, Z):
    return {"D": (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * X @ Z.T}


def gram(X):
    return {"G": X.T @ X}


def sym_two(n, alpha, X, T):
    idx = torch.arange(int(n))
    return {"Y": X * X + X.flip(0) * X * alpha, "D": T[idx, idx, 0] * T[idx, idx.flip(0), 1]}


def sym_diff(n, m, X):
    d = X[1:] - X[:-1]
    return {"Y": torch.cat([X[:1], d * d], 0)}


def multi_out2(X):
    u = X.abs().sum(1)
    c = (X > 0).sum(1).to(X.dtype)
    return {"U": u, "C": (X > 0).sum(1).to(torch.int32), "V": u * c + torch.sigmoid(u)}


def sched_forms(X, W):
    y = torch.exp(X * 0.5) @ W
    return {"Y": y * y}


def rfactor_sum(X):
    x2 = (X * X).reshape(3, 2, 4).sum(1)
    return {"Y": torch.sqrt(x2 + 1.0).sum(1)}


def blockized(A, B):
    return {"C": A @ (B * B)}


def annotated(X):
    return {"Y": torch.sigmoid(X) * X.flip(1)}


def guarded_store(X, W):
    even = (torch.arange(8) % 2 == 0)
    return {"Y": torch.where(even, (X * W) ** 2, X), "Z": W * 2.0}


def interleave(X, Z):
    y = torch.stack([X * Z, X - Z.flip(0) ** 2], 1)
    return {"Y": y.reshape(10)}


def cond_blocks(X):
    ys = []
    for i in range(6):
        ys.append(X[i] * X[i] if i % 2 == 0 else torch.exp(X[i]) * X[i - 1])
    return {"Y": torch.stack(ys)}


def let_expr(X, W):
    x = X * W
    return {"Y": x * x * x + x + X}


def zero_d(X):
    y = X / X.sum()
    return {"Y": y, "L": (y * torch.log(y)).sum()}


def const_bind(X, W):
    return {"Y": (X * W * torch.arange(1, 9, dtype=X.dtype)).sum(1)[None]}


def causal_dw(X, W):
    return {"Y": F.conv1d(F.pad(X, (2, 0))[None], W.flip(1)[:, None, :], groups=3)[0]}


def i64_rows(E, I, M):
    g = E[I]
    return {"Y": g * (M.to(E.dtype) + 0.5)[:, None] * g.flip(1)}


def two_layouts(X):
    v = X * X.flip(1)
    return {"Y": v, "Z": (v * X).T}


def sym_scan(n, X):
    n = int(n)
    y = [X[n - 1]]
    for t in range(1, n):
        y.append(y[-1] * 0.5 + X[n - 1 - t] * X[t])
    return {"Y": torch.stack(y)}


def sym_tri(n, A, V):
    return {"Y": V + torch.tril(A) @ V}


def scope_where(X):
    s = (X * X).sum(1)
    return {"S": s, "Y": X / (s[:, None] + 1.0)}


def thread_compute_at(X):
    t = torch.sigmoid(X)
    return {"Y": t * t.flip(1)}


def guarded_acc(X, W):
    return {"Y": torch.relu(X * W).sum(1)}


def mixed_red(X, B):
    v = X * X
    return {"S": B * B + v.sum(1), "M": torch.maximum(v.amax(1), B)}


def softmax_local(X):
    return {"Y": torch.softmax(X, 1)}


def inner_offset(n, X):
    return {"Y": X[:, 0] + (X[:, 1:] * X[:, :-1]).sum(1)}


def two_strides(X):
    idx = (torch.arange(5) * 2) % 5
    return {"Y": (X * X[:, idx]).sum(1)}


def if_argmax(X):
    m, a = X.max(1)
    return {"M": m, "A": a.to(torch.int32), "N": (X * X).amin(1)}


def plain_c(A, B, Bias):
    c = A @ B + Bias
    return {"C": c, "Y": torch.tanh(c) * c}


def opaque_init(X, W):
    return {"Y": W[0] + X @ W}


def sched_cache(A, B):
    c = A @ B
    return {"C": c * c}


def stat_per_tile(X):
    return {"Y": X * torch.rsqrt(1.0 + (X * X).sum(1, keepdim=True))}


def sched_rfactor_conv(X, W, B):
    return {"Y": torch.relu(F.conv1d(X[None], W, B)[0])}


def sched_softmax(X):
    return {"Y": torch.softmax(X, 1)}


def nll_ignore(X, T):
    if bool((T >= 0).any()):
        return {"L": F.nll_loss(X, T, ignore_index=-1).reshape(1)}
    return {"L": (X.sum() * 0.0).reshape(1)}


def plain_stats(X):
    s = X.sum(1)
    q = (X * X).sum(1)
    return {"S": s, "Q": q, "V": q / 5.0 - s * s / 25.0}


def cum_tail(X):
    y = [X[:, 0]]
    for t in range(1, 7):
        y.append(y[-1] * 0.9 + X[:, t])
    return {"Y": torch.stack(y, 1)}


def rnn_split(X, W):
    h, out = torch.zeros(3, dtype=X.dtype), []
    for t in range(6):
        h = torch.tanh(h * W + X[t])
        out.append(h)
    return {"H": torch.stack(out)}


def rnn_w(X, W):
    h, out = torch.zeros(3, dtype=X.dtype), []
    for t in range(5):
        h = torch.tanh(h * (W * 2.0) + X[t])
        out.append(h)
    return {"H": torch.stack(out)}


def i64_split(X, W):
    return {"Y": F.conv1d(X[None, None], W[None, None], stride=2)[0, 0]}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
