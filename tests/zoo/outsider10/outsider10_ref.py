#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider10/outsider10.tir, checked by the zoo's check.py.

    outsider10_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64, scalars as
0-d tensors) and returns a dict output name -> tensor, written from the PyTorch definitions
(torch.nn.functional, torch.einsum, torch.linalg), not from the .tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def einsum_iij(X):
    return {"Y": torch.einsum("iij,iij->j", X, X)}


def einsum_ii_ij(A, B):
    return {"Y": torch.einsum("ii,ij->j", A, B)}


def batched_trace(X, W):
    return {"T": torch.einsum("bii->b", X) * W, "Q": torch.einsum("bij,bji->b", X, X)}


def tril_bmm(A, B):
    return {"Y": torch.tril(A) @ B}


def cummin_scan(X):
    return {"Y": torch.cummin(X, 1).values}


def cummax_idx(X):
    v, i = torch.cummax(X, 1)
    return {"V": v, "I": i}


def logaddexp(A, B, C):
    return {"Y": torch.logaddexp(A, B) * C}


def conv1d_circular(X, W):
    return {"Y": F.conv1d(F.pad(X[None], (1, 1), mode="circular"), W)[0]}


def conv2d_gsdp(X, W, Bs):
    return {"Y": F.conv2d(X, W, Bs, stride=2, padding=2, dilation=2, groups=2)}


def conv3d_sd(X, W):
    return {"Y": F.conv3d(X[None], W, stride=2, dilation=2)[0]}


def maxpool3d(X):
    return {"Y": F.max_pool3d(X[None], 3, 2, padding=1)[0]}


def avgpool3d_excl(X):
    return {"Y": F.avg_pool3d(X[None], 2, 2, padding=1, count_include_pad=False)[0]}


def trilinear_ac(X):
    return {"Y": F.interpolate(X[None, None], size=(3, 5, 4), mode="trilinear", align_corners=True)[0, 0]}


def masked_softmax_ninf(S, M):
    keep = M != 0
    keep[:, 0] = True
    return {"P": S.masked_fill(~keep, float("-inf")).softmax(-1)}


def softmax_learned_temp(X, Tau):
    return {"P": (X / Tau).softmax(-1)}


def batch_norm_train(X, G, Bt, Rm, Rv):
    mu, var = X.mean(0), X.var(0, unbiased=False)
    y = F.batch_norm(X, None, None, G, Bt, training=True, eps=1e-5)
    return {"Y": y, "Rm2": 0.9 * Rm + 0.1 * mu, "Rv2": 0.9 * Rv + 0.1 * var * 5 / 4}


def adam_update(P, Gr, M, V):
    m = 0.9 * M + 0.1 * Gr
    v = 0.999 * V + 0.001 * Gr * Gr
    mh, vh = m / (1 - 0.9 ** 3), v / (1 - 0.999 ** 3)
    return {"P2": P - 0.01 * mh / (torch.sqrt(vh) + 1e-8), "M2": m, "V2": v}


def attn_two_out(Q, K, V):
    p = (Q @ K.T / 2 ** 0.5).softmax(-1)
    return {"O": p @ V, "Pr": p}


def relpos_attn(Q, K, Bias):
    i = torch.arange(4)
    return {"S": Q @ K.T + Bias[i[:, None] - i[None, :] + 3]}


def ce_spatial(X, T):
    return {"L": F.cross_entropy(X, T).reshape(1)}


def multilabel_soft_margin(X, Y):
    return {"L": F.multilabel_soft_margin_loss(X, Y.to(X.dtype)).reshape(1)}


def squared_hinge(X, Y):
    y = (2 * Y - 1).to(X.dtype)
    return {"L": (torch.clamp(1 - y * X, min=0) ** 2).mean().reshape(1)}


def pairwise_distance(A, B):
    return {"D": F.pairwise_distance(A, B, p=2, eps=1e-6)}


def cdist_p3(A, B):
    return {"D": torch.cdist(A, B, p=3)}


def cos_sim_matrix(A, B):
    na = torch.clamp(A.norm(dim=1), min=1e-8)
    nb = torch.clamp(B.norm(dim=1), min=1e-8)
    return {"C": (A / na[:, None]) @ (B / nb[:, None]).T}


def fake_quant_lsq(X, Sc):
    return {"Y": torch.clamp(torch.round(X * 4 / Sc), -8, 7) * Sc}


def sym_bmm(n, A, B):
    return {"Y": torch.bmm(A, B)}


def inplace_rowcol(X):
    top = X[:2] * X[:2, 3:4]  # x[:2] *= x[:2, 3:] on a clone (before any row changes)
    return {"Y": torch.tanh(torch.cat([top, X[2:] + top]))}


def std_unbiased(X):
    return {"S": torch.std(X, 1)}


def lse_2d(X):
    return {"Y": torch.logsumexp(X, dim=(1, 3))}


def amax_2d(X, W):
    return {"Y": torch.amax(X * W, dim=(0, 2))}


def matpow3(A):
    return {"Y": torch.linalg.matrix_power(A, 3)}


def weight_norm_conv1d(X, V, G):
    w = G[:, None, None] * V / V.norm(dim=(1, 2), keepdim=True)
    return {"Y": F.conv1d(X[None], w)[0]}


def bf16_linear(X, W):
    return {"Y": F.gelu(X @ W.T, approximate="tanh")}


def one_hot_cast(X, W, T):
    return {"Y": (F.one_hot(T, 5).to(X.dtype) * X * W).sum(1)}


def glu_conv1d(X, W):
    return {"Y": F.glu(F.conv1d(X[None], W, padding=1)[0], dim=0)}


def roll_flip(X, W):
    return {"Y": torch.roll(X, shifts=-2, dims=1).flip(0) * W}


def poly_and_deriv(C, X):
    p = torch.zeros_like(X)
    for k in range(4):
        p = p * X + C[:, k]
    d = torch.zeros_like(X)
    for k in range(3):
        d = d * X + C[:, k] * (3 - k)
    return {"P": p, "D": d}


def instnorm_sym(n, X, G, B):
    return {"Y": F.instance_norm(X, weight=G, bias=B, eps=1e-5)}


def triplet_cosine(A, P, N):
    def dist(a, b):
        return 1 - (a * b).sum(1) / torch.sqrt((a * a).sum(1) * (b * b).sum(1))
    return {"L": F.triplet_margin_with_distance_loss(A, P, N, distance_function=dist, margin=0.5).reshape(1)}


def gather_scatter_nd(X, Ix, Out):
    g = X[Ix[:, 0], Ix[:, 1] + 1]
    return {"Y": torch.zeros(4, 2, dtype=X.dtype).index_add(0, Out, g * g)}


def pixel_unshuffle(X, S):
    return {"Y": F.pixel_unshuffle(X[None], 2)[0] * S[:, None, None]}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
