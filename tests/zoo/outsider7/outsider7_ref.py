#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider7/outsider7.tir, checked by the zoo's check.py.

    outsider7_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors, scalars as 0-d tensors) and
returns a dict output name -> tensor, written from the PyTorch definitions (torch.nn.functional
where an operator exists), not from the .tir. Casts between float types are identities here
(the gradients are compared in f64).
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def grid_sample2d(X, G):
    gy, gx = G[:, 0], G[:, 1] * 1.3
    # align_corners=True: pixel p <-> normalised 2 p / (size - 1) - 1; border padding.
    grid = torch.stack([gx / 4.0 * 2 - 1, gy / 3.0 * 2 - 1], -1)[None, None]  # [1, 1, 6, 2]
    y = F.grid_sample(X[None], grid, mode="bilinear", padding_mode="border", align_corners=True)
    return {"Y": y[0, :, 0, :]}


def roi_align1d(X, R):
    out = []
    for r in range(R.shape[0]):
        bins = []
        for b in range(3):
            acc = 0
            for s in range(2):
                pos = R[r, 0] + R[r, 1] / 3.0 * (b + (s + 0.5) / 2.0)
                i0 = int(torch.floor(pos))
                w = pos - torch.floor(pos)
                acc = acc + ((1 - w) * X[:, i0] + w * X[:, i0 + 1]) * 0.5
            bins.append(acc)
        out.append(torch.stack(bins, -1))
    return {"Y": torch.stack(out)}


def deform_conv1d(X, Off, W):
    l = torch.arange(8, dtype=X.dtype)[:, None]
    k = torch.arange(3, dtype=X.dtype)[None, :]
    p = l + k - 1 + Off
    i0 = torch.floor(p)
    w = p - i0
    Xp = F.pad(X, (4, 4))  # zero padding outside [0, 8)
    a = Xp[i0.long() + 4]
    b = Xp[i0.long() + 5]
    return {"Y": (W[None, :] * ((1 - w) * a + w * b)).sum(1)}


def bilinear_ac(X):
    return {"Y": F.interpolate(X[None], size=(7, 7), mode="bilinear", align_corners=True)[0]}


def bicubic_ac(X):
    y = F.interpolate(X[None, :, None, :], size=(1, 9), mode="bicubic", align_corners=True)
    return {"Y": y[0, :, 0, :]}


def logcumsumexp_mid(X):
    return {"Y": torch.logcumsumexp(X, 1)}


def cumprod_axis0(X, W):
    return {"Y": torch.cumprod(X, 0) * W}


def top1_gather(S, V):
    m, a = S.max(1)
    return {"M": m, "Y": V[torch.arange(4), a] * m[:, None]}


def segment_mean(X, Seg):
    s = torch.zeros(3, 2, dtype=X.dtype).index_add(0, Seg.long(), X)
    cnt = torch.bincount(Seg.long(), minlength=3).to(X.dtype)
    return {"S": s, "Mn": s / torch.clamp(cnt, min=1.0)[:, None]}


def scatter_add1(Z, I, X):
    t = Z.scatter_add(1, I.long(), X * X)
    return {"Y": t * t}


def index_add0(I, X, A):
    return {"Y": torch.zeros(4, 3, dtype=X.dtype).index_add(0, I.long(), X * A[:, None])}


def tril_fill(X):
    keep = torch.ones(4, 5, dtype=torch.bool).tril()
    return {"Y": torch.where(keep, X * X, -X)}


def masked_fill_triu(X, M):
    y = torch.triu(X * X.T).masked_fill(M.bool(), -2.0)
    return {"Y": y, "S": (y * X).sum(1)}


def pdist_eps(X):
    d = X[:, None, :] - X[None, :, :]
    return {"D": torch.sqrt((d * d).sum(-1) + 1e-6)}


def gram_centered(X):
    xc = X - X.mean(0)
    return {"C": xc.T @ xc / 6.0}


def cross3(A, B):
    return {"C": torch.linalg.cross(A, B, dim=1)}


def det3(A):
    return {"D": torch.linalg.det(A), "D2": torch.log(torch.abs(torch.linalg.det(A[:, :2, :2])) + 1.0)}


def poly_pow(Cf, X):
    p = sum(Cf[k] * X ** k for k in range(4))
    dp = sum((k + 1) * Cf[k + 1] * X ** k for k in range(3))
    return {"P": p, "Dp": dp}


def pnorm_normalize(X):
    n = (X.abs() ** 3).sum(1, keepdim=True)
    return {"Y": X / torch.clamp((n + 1e-6) ** (1.0 / 3.0), min=1e-3)}


def attn_dropout(Q, K, V, Dm):
    s = Q @ K.T * 0.5
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), 1)
    p = p * Dm.to(Q.dtype) / 0.75  # dropout with the given keep mask, p = 0.25
    return {"O": p @ V}


def batched_gather(X, I, W):
    return {"Y": torch.gather(X, 1, I.long()) * W * X[:, :4]}


def sum_axes02(X):
    s = X.sum((0, 2))
    return {"S": s, "Q": X.permute(1, 0, 2).reshape(4, -1).var(1, unbiased=False)}


def where_reduce(X):
    j = torch.arange(6)[None, :]
    i = torch.arange(4)[:, None]
    e = ((X * X) * ((j % 2 == 0) | (j == i))).sum(1)
    t = 1.0 + (torch.exp(X) * 0.1 * (j <= i + 1)).sum(1)
    return {"E": e, "T": t}


def overlap_reads(X):
    a, b, c = X[:-2], X[1:-1], X[2:]
    return {"Y": a * b - c * a + b * b * 0.5}


def diag_bands(X):
    i = torch.arange(4)
    return {"Y": X[i, i] * X[i, i + 1] + X[i + 1, i] * X[i + 1, i + 1]}


def halide_trap(X):
    d = torch.diagonal(X)
    return {"Y": d * X.flip(1).diagonal(), "Z": X.T * d[:, None] + d[None, :]}


def unfold_step(X, W):
    u = X.unfold(0, 3, 2) * W
    idx = (torch.arange(4)[:, None] * 2 + torch.arange(3)[None, :]).flatten()
    return {"U": u, "Y": torch.zeros(9, dtype=X.dtype).index_add(0, idx, u.flatten())}


def sym_i64_conv(n, X, W):
    return {"Y": F.conv1d(X[None, None], W[None, None])[0, 0]}


def mixed_int_idx(X, I, J, O):
    I, J, O = I.long(), J.long(), O.long()
    return {"Y": X[I, J] * X[O + 3, 3 - J]}


def softmax_f64(tau, X):
    return {"Y": torch.softmax(X / tau, 1)}


def layernorm_f16(X, G):
    return {"Y": F.layer_norm(X, (4,), weight=G, eps=1e-5)}


def gelu_erf_bf16(X):
    return {"Y": F.gelu(X)}


def inplace_ops(X, W):
    y = X * W
    y = torch.maximum(y, X.flip(0) * 0.5)
    odd = y[1::2] + y[0::2] * W[:4]
    return {"Y": torch.stack([y[0::2], odd], 1).flatten()}


def chain8(X, W):
    a = X * W + 0.1
    b = torch.tanh(a)
    r = (b * b).sum(1, keepdim=True)
    c = b / torch.sqrt(r + 1.0)
    d = c[:, 1:] - c[:, :-1]
    y = F.pad(d, (0, 1)) + a
    return {"Y": y, "L": (d.abs().sum() * 0.05).reshape(1)}


def rnn_lin_i64(X, Wh, Wx):
    hs, h = [], None
    for t in range(5):
        h = X[t] * Wx if h is None else X[t] * Wx + Wh @ h
        hs.append(h)
    return {"H": torch.stack(hs)}


def gru_masked(X, U, Len):
    hs, h = [], torch.zeros(2, dtype=X.dtype)
    for t in range(5):
        z = X[t] + (U @ h if t > 0 else 0)
        g = torch.sigmoid(z)
        h = g * h + (1 - g) * torch.tanh(X[t]) if t < int(Len[0]) else h
        hs.append(h)
    return {"H": torch.stack(hs)}


def top2_sum(X):
    return {"Y": torch.topk(X, 2, dim=1).values.sum(1)}


def softmax_len(len, X):
    n = int(len)
    return {"Y": F.pad(torch.softmax(X[:, :n], 1), (0, 6 - n))}


def rev_cumsum_sym(n, m, X):
    z = X * X
    z = torch.cat([z[:-1], X[-1:]], 0)
    return {"Y": z.flip(0).cumsum(0).flip(0)}


def clamp_lerp(X, Lo, Hi, T, Wt):
    return {"Y": torch.lerp(torch.clamp(X, min=Lo, max=Hi), T, Wt)}


def two_ifs(X):
    i = torch.arange(4)[:, None]
    y = torch.where(i != 1, torch.tanh(X) * X.T, X * 3.0)
    return {"Y": y, "S": (y * y).sum(1)}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
