#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider9/outsider9.tir, checked by the zoo's check.py.

    outsider9_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64, scalars as
0-d tensors) and returns a dict output name -> tensor, written from the PyTorch definitions
(torch.nn.functional, torch.linalg, complex tensors where an operator exists), not from the .tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def segment_sum_csr(X, Off):
    rows = []
    for s in range(3):
        lo, hi = int(Off[s]), int(Off[s + 1])
        seg = X[lo:hi] if lo < hi else X[:0]
        rows.append((seg * seg).sum(0))
    return {"Y": torch.stack(rows)}


def scatter_amax(Base, I, X):
    idx = I[:, None].expand(6, 2)
    return {"Y": Base.scatter_reduce(0, idx, X * 2.0, reduce="amax", include_self=True)}


def index_put_acc(X, I, J, V):
    T = X.clone()
    T = T.index_put((I, J), V * X[I, 3 - J], accumulate=True)
    return {"Y": torch.sin(T)}


def selective_scan(X, Dt, A, Bm, Cm, Dd):
    h = torch.zeros(2, 3, dtype=X.dtype)
    ys = []
    for t in range(4):
        h = torch.exp(Dt[t][:, None] * A) * h + Dt[t][:, None] * Bm[t][None, :] * X[t][:, None]
        ys.append(h @ Cm[t] + Dd * X[t])
    return {"Y": torch.stack(ys)}


def lru_complex(X, Nu, Th, Br, Bi, Cr, Ci):
    lam = torch.polar(torch.exp(-torch.exp(Nu)), Th)
    B = torch.complex(Br, Bi)
    C = torch.complex(Cr, Ci)
    h = torch.zeros(3, dtype=B.dtype)
    ys = []
    for t in range(5):
        h = lam * h + B @ X[t].to(B.dtype)
        ys.append((C * h).sum().real)
    return {"Y": torch.stack(ys)}


def linear_attn(Q, K, V):
    pq, pk = F.elu(Q) + 1.0, F.elu(K) + 1.0
    S = torch.cumsum(pk[:, :, None] * V[:, None, :], 0)
    Z = torch.cumsum(pk, 0)
    num = torch.einsum("ta,tab->tb", pq, S)
    den = (pq * Z).sum(1)
    return {"O": num / den[:, None]}


def thomas(Lo, Dg, Up, R):
    A = torch.diag(Dg) + torch.diag(Lo[1:], -1) + torch.diag(Up[:4], 1)
    return {"Xs": torch.linalg.solve(A, R)}


def birnn(X, Wf, Uf, Wb, Ub):
    hf, hb = [], [None] * 4
    h = torch.zeros(2, dtype=X.dtype)
    for t in range(4):
        h = torch.tanh(Wf @ X[t] + Uf * h)
        hf.append(h)
    h = torch.zeros(2, dtype=X.dtype)
    for t in reversed(range(4)):
        h = torch.tanh(Wb @ X[t] + Ub * h)
        hb[t] = h
    return {"Y": torch.cat([torch.stack(hf), torch.stack(hb)], 1)}


def cumprod_reset(X, Rs):
    cols, y = [], None
    for t in range(6):
        y = X[:, t] if t == 0 or int(Rs[t]) == 1 else y * X[:, t]
        cols.append(y)
    return {"Y": torch.stack(cols, 1)}


def ema_debias(X, Bt):
    b = Bt[0]
    m, out = torch.zeros(2, dtype=X.dtype), []
    for t in range(5):
        m = b * m + (1 - b) * X[t]
        out.append(m / (1 - b ** (t + 1)))
    return {"Mh": torch.stack(out)}


def spectral_norm_step(W, U0):
    v = W.t() @ U0
    v = v / torch.sqrt((v * v).sum() + 1e-12)
    wv = W @ v
    u = wv / torch.sqrt((wv * wv).sum() + 1e-12)
    sigma = torch.dot(u, wv)
    return {"Wn": W / sigma}


def weight_norm_linear(X, Vw, G):
    W = torch._weight_norm(Vw, G, 0)
    return {"Y": X @ W.t()}


def householder(V, X):
    H = torch.eye(4, dtype=V.dtype) - 2.0 * torch.outer(V, V) / torch.dot(V, V)
    return {"Y": H @ X}


def gqa_attn(Q, K, V):
    Kr, Vr = K.repeat_interleave(2, 0), V.repeat_interleave(2, 0)
    P = torch.softmax(Q @ Kr.transpose(1, 2) * 0.70710678, -1)
    return {"O": P @ Vr}


def swa_attn(Q, K, V):
    i = torch.arange(5)
    band = (i[:, None] - i[None, :]).abs() <= 1
    S = (Q @ K.t()).masked_fill(~band, float("-inf"))
    return {"O": torch.softmax(S, 1) @ V}


def causal_dwconv(X, W, Bs):
    c = F.conv1d(F.pad(X[None], (4, 0)), W[:, None, :], Bs, dilation=2, groups=2)[0]
    return {"Y": F.silu(c)}


def convt1d_grp_dil(X, W):
    return {"Y": F.conv_transpose1d(X[None], W, stride=3, padding=1, output_padding=1, dilation=2, groups=2)[0]}


def unshuffle_conv1x1(X, W):
    u = F.pixel_unshuffle(X[None], 2)[0]
    return {"Y": torch.einsum("oc,chw->ohw", W, u)}


def nearest_frac2d(X, W):
    return {"Y": F.interpolate(X[None, None], size=(3, 7), mode="nearest")[0, 0] * W}


def resize_half_pixel(X):
    return {"Y": F.interpolate(X[None, None], size=(6, 5), mode="bilinear", align_corners=False)[0, 0]}


def lp_pool1d(X):
    return {"Y": F.lp_pool1d(X[None], 2, 3, stride=2)[0]}


def col2im_stride(Cl):
    y = F.fold(Cl.reshape(1, 6, 3), output_size=(1, 6), kernel_size=(1, 3), stride=(1, 2), padding=(0, 1))
    return {"Y": y[0, :, 0, :]}


def dice_loss(X, T):
    p = torch.sigmoid(X)
    inter, union = (p * T).sum(1), p.sum(1) + T.sum(1)
    return {"L": (1 - (2 * inter + 1) / (union + 1)).mean().reshape(1)}


def contrastive(X1, X2, Lb):
    d2 = ((X1 - X2) ** 2).sum(1) + 1e-6
    d = torch.sqrt(d2)
    loss = torch.where(Lb == 1, d2, torch.clamp(1.5 - d, min=0) ** 2)
    return {"L": loss.mean().reshape(1)}


def hinge_embedding(X, Y):
    return {"L": F.hinge_embedding_loss(X, (2 * Y - 1).to(X.dtype), margin=1.0).reshape(1)}


def gaussian_nll(X, T, Vr):
    return {"L": F.gaussian_nll_loss(X, T, Vr, eps=1e-6).reshape(1)}


def poisson_nll(X, T):
    return {"L": F.poisson_nll_loss(X, T, log_input=True, full=False).reshape(1)}


def soft_margin(X, Y):
    return {"L": F.soft_margin_loss(X, (2 * Y - 1).to(X.dtype)).reshape(1)}


def ce_ls_ignore(X, T):
    return {"L": F.cross_entropy(X, T, ignore_index=-1, label_smoothing=0.1).reshape(1)}


def groupnorm_sym(n, X, G, B):
    return {"Y": F.group_norm(X, 2, G, B, eps=1e-5)}


def rmsnorm_gated(X, Zg, W):
    g = X * F.silu(Zg)
    return {"Y": g * torch.rsqrt((g * g).mean(1, keepdim=True) + 1e-6) * W}


def moments3(X):
    return {"Mn": X.mean(1), "Vr": X.var(1, unbiased=False), "Mx": X.max(1).values}


def masked_update_where(X, Mk, W):
    Y = X * X
    Y = torch.where((Mk > 0)[:, None], Y * W + X, Y)
    return {"Y": torch.tanh(Y)}


def cplx_matvec(Ar, Ai, Xr, Xi):
    y = torch.complex(Ar, Ai) @ torch.complex(Xr, Xi)
    return {"Mag": y.abs()}


def pade_act(X, Pa, Qb):
    P = sum(Pa[k] * X ** k for k in range(4))
    Q = sum(Qb[k] * X ** (k + 1) for k in range(2))
    return {"Y": P / (1 + Q.abs())}


def diff2_prepend(X, P):
    return {"Y": torch.diff(X, n=2, dim=1, prepend=P)}


def gram_schmidt2(A, Bv):
    u1 = A / torch.linalg.vector_norm(A)
    w = Bv - torch.dot(u1, Bv) * u1
    return {"U": torch.stack([u1, w / torch.linalg.vector_norm(w)])}


def embed_f64_i64(Tb, I, W):
    return {"Y": torch.tanh(F.embedding(I, Tb) @ W)}


def gather_f64acc(X, I, W):
    g = X[I]
    return {"Y": (g * g * W).sum(1)}


def focal_mc(X, T):
    lpt = F.log_softmax(X, 1).gather(1, T[:, None])[:, 0]
    p = lpt.exp()
    return {"L": (-(1 - p) ** 2 * lpt).mean().reshape(1)}


def lstm_cifg(X, Wx, Wh):
    h = c = torch.zeros(3, dtype=X.dtype)
    hs = []
    for t in range(4):
        g = Wx @ X[t] + Wh * h.repeat(3)
        f, gg, o = torch.sigmoid(g[:3]), torch.tanh(g[3:6]), torch.sigmoid(g[6:])
        c = f * c + (1 - f) * gg
        h = o * torch.tanh(c)
        hs.append(h)
    return {"H": torch.stack(hs)}


def pinball(P, Y, Qt):
    e = Y - P
    return {"L": torch.maximum(Qt * e, (Qt - 1) * e).sum(0)}


def conv1d_grp_dil(X, W, Bs):
    return {"Y": F.conv1d(X[None], W, Bs, padding=2, dilation=2, groups=2)[0]}


def gru_torch(X, Wi, Whh, Bi, Bh):
    h, hs = torch.zeros(2, dtype=X.dtype), []
    for t in range(3):
        gi, gh = Wi @ X[t] + Bi, Whh @ h + Bh
        r = torch.sigmoid(gi[:2] + gh[:2])
        z = torch.sigmoid(gi[2:4] + gh[2:4])
        n = torch.tanh(gi[4:] + r * gh[4:])
        h = (1 - z) * n + z * h
        hs.append(h)
    return {"H": torch.stack(hs)}


def adaptive_max1d(X):
    return {"Y": F.adaptive_max_pool1d(X[None], 3)[0]}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
