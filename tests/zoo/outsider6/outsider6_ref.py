#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider6/outsider6.tir, checked by the zoo's check.py.

    outsider6_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors, scalars as 0-d tensors) and
returns a dict output name -> tensor, written from the PyTorch definitions, not from the .tir.
Casts between float types are identities here (the gradients are compared in f64).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def celu_alpha(alpha, X):
    return {"Y": F.celu(X, float(alpha))}


def hardswish_ite(X):
    return {"Y": F.hardswish(X)}


def hardsigmoid_sel(X, W):
    return {"Y": F.hardsigmoid(X) * W}


def glu_half(X):
    return {"Y": F.glu(X, dim=1)}


def swish_beta(beta, X):
    return {"Y": X * torch.sigmoid(float(beta) * X)}


def softplus_thr(beta, X):
    return {"Y": F.softplus(X, beta=float(beta), threshold=20.0)}


def logsigmoid_stable(X):
    return {"Y": F.logsigmoid(X)}


def mish_blocks(X):
    return {"Y": F.mish(X)}


def elu_select(X):
    return {"Y": F.elu(X, 1.3)}


def gelu_tanh(X):
    return {"Y": F.gelu(X, approximate="tanh")}


def rms_scale(eps, X, G):
    return {"Y": X * torch.rsqrt((X * X).mean(1, keepdim=True) + float(eps)) * G}


def group_norm_div(X, G, B):
    return {"Y": F.group_norm(X, 3, G, B, eps=1e-5)}


def weight_std_conv(X, W):
    m = W.mean((1, 2), keepdim=True)
    v = W.var((1, 2), unbiased=False, keepdim=True)
    return {"Y": F.conv1d(X[None], (W - m) / torch.sqrt(v + 1e-5))[0]}


def cosine_embed(X1, X2, T):
    y = (T * 2 - 1).to(X1.dtype)
    d = (X1 * X2).sum(1)
    c = d / torch.sqrt(((X1 * X1).sum(1) + 1e-12) * ((X2 * X2).sum(1) + 1e-12))
    # torch's cosine_embedding_loss uses the same eps-regularised cosine (EPSILON = 1e-12).
    ref = F.cosine_embedding_loss(X1, X2, y, margin=0.2)
    mine = torch.where(y > 0, 1.0 - c, torch.clamp(c - 0.2, min=0.0)).mean()
    assert torch.allclose(ref, mine, rtol=1e-6, atol=1e-9), (ref, mine)
    return {"L": ref.reshape(1)}


def triplet(A, P, N):
    return {"L": F.triplet_margin_loss(A, P, N, margin=1.0, p=2, eps=1e-6).reshape(1)}


def margin_rank(margin, X1, X2, T):
    y = (T * 2 - 1).to(X1.dtype)
    return {"L": F.margin_ranking_loss(X1, X2, y, margin=float(margin), reduction="sum").reshape(1)}


def multi_margin(X, T):
    return {"L": F.multi_margin_loss(X, T, reduction="none")}


def focal(X, T):
    logp = F.log_softmax(X, 1).gather(1, T[:, None])[:, 0]
    return {"L": (-(1.0 - logp.exp()) ** 2 * logp).mean().reshape(1)}


def masked_mean(X, Len):
    out = []
    for b in range(X.shape[0]):
        out.append(X[b, :int(Len[b])].mean(0))
    return {"Y": torch.stack(out)}


def bce_posw(X, T, PW):
    # torch's formula (binary_cross_entropy_with_logits has no derivative for pos_weight):
    # (1 - t) x + (1 + (pw - 1) t) softplus(-x), checked against the library value.
    loss = ((1.0 - T) * X + (1.0 + (PW - 1.0) * T) * F.softplus(-X)).mean()
    with torch.no_grad():
        lib = F.binary_cross_entropy_with_logits(X, T, pos_weight=PW)
    assert torch.allclose(loss.detach(), lib, rtol=1e-9, atol=1e-12), (loss, lib)
    return {"L": loss.reshape(1)}


def logcosh(P, Q):
    return {"L": torch.log(torch.cosh(P - Q)).sum(1)}


def channel_shuffle(X):
    with torch.no_grad():
        lib = F.channel_shuffle(X[None].detach(), 2)[0]
    y = X.reshape(2, 3, 2, 2).transpose(0, 1).reshape(6, 2, 2)
    assert torch.equal(y.detach(), lib)
    return {"Y": y * X}


def pixel_shuffle_fused(X):
    x = F.pixel_shuffle(X[None], 2)[0]
    return {"Y": x * x + x}


def unfold_dil(X):
    return {"Y": F.unfold((X * X)[None], 2, dilation=2, padding=1)[0]}


def fold_gather(C):
    y = F.fold(C[None], (4, 4), 2)[0]
    return {"Y": y * y}


def fold_scatter(C):
    return {"Y": F.fold(C[None] * 2.0, (4, 4), 2)[0]}


def conv_group_dil(X, W, B):
    return {"Y": F.conv1d(X[None], W, B, padding=2, dilation=2, groups=2)[0]}


def conv3d_t(X, W):
    return {"Y": F.conv_transpose3d(X[None], W, stride=2)[0]}


def avgpool_ceil(X):
    return {"Y": F.avg_pool1d(X[None], 3, 2, ceil_mode=True)[0]}


def adaptive_where(X):
    return {"Y": F.adaptive_avg_pool1d(X[None], 4)[0]}


def max_unpool(X):
    m, a = F.max_pool1d(X[None], 2, return_indices=True)
    u = F.max_unpool1d(m, a, 2)[0]
    return {"Y": u * X + u}


def bilinear_int(X):
    return {"Y": F.interpolate(X[None], size=(7, 7), mode="bilinear", align_corners=False)[0]}


def conv_reflect(X, W):
    xp = F.pad(X[None, None], (1, 1), mode="reflect")
    return {"Y": F.conv1d(xp, W[None, None])[0, 0] * X}


def interp1d(X, G):
    f = torch.floor(G)
    i0 = f.long()
    w = G - f
    return {"Y": X[i0] * (1.0 - w) + X[i0 + 1] * w}


def embbag_len(W, I, Len, P):
    idx, off, w = [], [], []
    for b in range(4):
        off.append(len(idx))
        for l in range(int(Len[b])):
            idx.append(int(I[b * 3 + l]))
            w.append(P[b * 3 + l])
    idx_t = torch.tensor(idx, dtype=torch.int64)
    w_t = torch.stack(w) if w else P[:0]
    return {"Y": F.embedding_bag(idx_t, W, torch.tensor(off, dtype=torch.int64), mode="sum",
                                 per_sample_weights=w_t)}


def embbag_offsets(W, I, Len):
    n = int(Len.sum())
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(Len, 0)[:-1]])
    return {"Y": F.embedding_bag(I[:n], W * W.flip(1), offsets, mode="sum")}


def gather_nd2(X, I, J):
    return {"Y": X[I, J] * X[J % 5, I]}


def index_select1(X, I, W):
    return {"Y": torch.tanh(X.index_select(1, I)) * W}


def index_add_read(X, I, V):
    y = X.index_add(0, I, V * X[:4])
    return {"Z": y * y}


def cummax_scan(X):
    return {"Y": torch.cummax(X, 1).values}


def excl_cumprod(X):
    ones = torch.ones_like(X[:, :1])
    return {"Y": torch.cumprod(torch.cat([ones, X[:, :-1]], 1), 1)}


def rev_logcumsumexp(X):
    return {"Y": torch.logcumsumexp(X.flip(1), 1).flip(1)}


def coupled_states(X, A, B):
    hs, cs = [], []
    c = None
    for t in range(5):
        h = X[t] if c is None else X[t] + A @ c
        c_new = torch.tanh(B @ h) + (0.0 if c is None else c * 0.5)
        hs.append(h)
        cs.append(c_new)
        c = c_new
    return {"H": torch.stack(hs), "C": torch.stack(cs)}


def soft_dtw(X, Z):
    big = torch.tensor(1e10, dtype=X.dtype)
    R = {}
    for i in range(4):
        for j in range(4):
            cost = (X[i] - Z[j]) ** 2
            if i == 0 and j == 0:
                R[i, j] = cost
                continue
            up = R[i - 1, j] if i >= 1 else big
            left = R[i, j - 1] if j >= 1 else big
            diag = R[i - 1, j - 1] if i >= 1 and j >= 1 else big
            R[i, j] = cost - torch.logsumexp(-torch.stack([up, left, diag]), 0)
    return {"L": R[3, 3].reshape(1)}


def horner(Cf, X):
    y = Cf[4] * torch.ones_like(X)
    for k in range(3, -1, -1):
        y = y * X + Cf[k]
    return {"Y": y}


def trisolve(L, Bm):
    return {"Xs": torch.linalg.solve_triangular(torch.tril(L), Bm, upper=False)}


def trisolve_upper(U, Bv):
    return {"Xv": torch.linalg.solve_triangular(torch.triu(U), Bv[:, None], upper=True)[:, 0]}


def volterra(X, W):
    ys = []
    for i in range(5):
        y = X[i]
        for k in range(i):
            y = y + W[i, k] * torch.tanh(ys[k])
        ys.append(y)
    return {"Y": torch.stack(ys)}


def _causal_attn(q, k, v, scale):
    s = (q @ k.T) * scale
    n = s.shape[0]
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, 1) @ v


def attn_causal_where(scale, Q, K, V):
    return {"O": _causal_attn(Q, K, V, float(scale))}


def attn_causal_sel(scale, Q, K, V):
    return {"O": _causal_attn(Q, K, V, float(scale))}


def mha_split(Q, K, V):
    q, k, v = (t.reshape(4, 2, 3).transpose(0, 1) for t in (Q, K, V))
    o = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(3.0), 2) @ v
    return {"O": o.transpose(0, 1).reshape(4, 6)}


def einsum_diag(X, W):
    d = torch.diag_embed(torch.einsum("iji,iji->i", X, X))
    return {"Y": d * W + d.T}


def softmax_mid(X):
    return {"Y": torch.softmax(X, 1)}


def logsm_blocks(X):
    return {"Y": F.log_softmax(X, 1)}


def three_outs(X):
    v = X.var(1, unbiased=True)
    m = X.mean(1)
    return {"Mu": m, "Var": v, "Y": (X - m[:, None]) / torch.sqrt(v[:, None] + 0.1)}


def inplace_chain(X, W):
    y = X * W * 2.0
    t = y.flip(0)
    y = torch.cat([y[:3] * t[:3], y[3:]])
    return {"Y": torch.sin(y) + X}


def mixed_prec(X, W, Z):
    y = X * W + Z * Z
    return {"Y": y, "S": (y * Z).sum().reshape(1)}


def offset_sym(n, off, X):
    n, off = int(n), int(off)
    return {"Y": X[off:off + n] * X[off + 2:off + 2 + n]}


def where_scalar(thr, X):
    i = torch.arange(8)
    return {"Y": torch.where(i < int(thr), X * X, X * 0.5)}


def init_reads(X, B):
    mx = torch.maximum(B * 2.0, X.max(1).values)
    return {"Mx": mx, "Pr": 2.0 * (X + B[:, None]).prod(1)}


# The printed F_grad functions: their reference is torch's own VJP of the forward, built with
# create_graph so that the outer check differentiates it again.
def _vjp(fn, inputs, cot):
    with torch.enable_grad():  # check.py computes outputs under no_grad
        inputs = [x if x.requires_grad else x.detach().requires_grad_(True) for x in inputs]
        out = fn(*inputs)
        return torch.autograd.grad(out, inputs, cot, create_graph=True)


def tanhmul_d(X, W, GY):
    dx, dw = _vjp(lambda x, w: torch.tanh(x * w) * x, (X, W), GY)
    return {"DX": dx, "DW": dw}


def sm_row_d(X, GY):
    (dx,) = _vjp(lambda x: torch.softmax(x, 1), (X,), GY)
    return {"DX": dx}


def ema_w_d(X, W, GY):
    def ema(x, w):
        ys, y = [], None
        for t in range(5):
            y = x[:, t] * w[t] if y is None else (y + x[:, t]) * w[t]
            ys.append(y)
        return torch.stack(ys, 1)
    dx, dw = _vjp(ema, (X, W), GY)
    return {"DX": dx, "DW": dw}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
