#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider3/outsider3.tir, checked by the zoo's check.py.

    outsider3_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors, scalars as 0-d tensors) and
returns a dict output name -> tensor, written from the PyTorch definitions, not from the .tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def conv1d_pds(X, W, B):
    return {"Y": F.conv1d(X[None], W, B, stride=2, padding=2, dilation=2)[0]}


def group_conv2d(X, W):
    return {"Y": F.conv2d(X, W, stride=2, padding=1, groups=2)}


def conv3d_pad(X, W):
    return {"Y": F.conv3d(X, W, stride=(1, 2, 2), padding=(0, 1, 1))}


def instance_norm_local(X, G, Bt):
    return {"Y": F.instance_norm(X, weight=G, bias=Bt, eps=1e-5)}


def rms_norm_f64(m, n, X, G):
    return {"Y": X / torch.sqrt((X * X).mean(1, keepdim=True) + 1e-6) * G}


def group_norm_fused(X):
    return {"Y": F.group_norm(X, 2, eps=1e-5)}


def activations(X):
    selu_like = torch.where(X > 0, 1.0507 * X, 1.0507 * 1.67326 * (torch.exp(X) - 1.0))
    return {"A": F.silu(X) + F.mish(X), "B": F.hardswish(X), "C": F.elu(X, alpha=1.5),
            "D": selu_like + F.softsign(X) + F.logsigmoid(X)}


def huber_mean(delta, P, T):
    return {"L": F.huber_loss(P, T, delta=float(delta)).reshape(1)}


def nll_weighted(LP, T, Wc):
    # F.nll_loss(LP, T, weight=Wc) (reduction mean), which autograd does not differentiate in Wc.
    w = Wc[T]
    return {"L": (-(w * LP.gather(1, T[:, None])[:, 0]).sum() / w.sum()).reshape(1)}


def kl_logits(P, Q):
    return {"L": F.kl_div(F.log_softmax(P, 1), F.log_softmax(Q, 1), reduction="batchmean",
                          log_target=True).reshape(1)}


def ce_smooth(X, T):
    return {"L": F.cross_entropy(X, T, reduction="none", label_smoothing=0.1)}


def cosine_sim(A, B):
    na = A.norm(dim=1).clamp_min(1e-8)
    nb = B.norm(dim=1).clamp_min(1e-8)
    return {"C": (A * B).sum(1) / (na * nb)}


def cdist(X, Z):
    return {"D": torch.sqrt(((X[:, None, :] - Z[None, :, :]) ** 2).sum(2) + 1e-6)}


def causal_softmax(X):
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    return {"Y": X.masked_fill(mask, float("-inf")).softmax(1)}


def trace_ab(A, B, Cm):
    return {"T": torch.trace(A @ B).reshape(1), "D": torch.diagonal(Cm, 1) * torch.diagonal(Cm, -1)}


def diag_embed(X, S):
    return {"Y": torch.diag_embed(X, offset=1) * S}


def kron(A, B):
    return {"K": torch.kron(A, B)}


def kron_scatter(A, B):
    return {"K": torch.kron(A, B)}


def einsum3(A, B, V):
    return {"Y": torch.einsum("bij,bjk,bk->bi", A, B, V)}


def bilinear(X1, X2, W, Bs):
    return {"Y": F.bilinear(X1, X2, W, Bs)}


def depth_to_space(X):
    # DCR order: input channel (dy * 2 + dx) * C + c.
    d2s = X.reshape(1, 2, 2, 2, 2, 3).permute(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)
    up = X[:, :2].repeat_interleave(2, 2).repeat_interleave(2, 3)
    return {"Y": d2s * up}


def space_to_depth(X):
    # pixel_unshuffle is CRD (channel c * 4 + d); the .tir uses DCR (d * 2 + c).
    u = F.pixel_unshuffle(X[None], 2)[0]
    return {"Y": u.reshape(2, 4, 2, 3).transpose(0, 1).reshape(8, 6)}


def im2col_gather(X):
    return {"Y": F.unfold(X[None], 3, padding=1)[0]}


def roll2d(X):
    return {"Y": torch.roll(X, shifts=(2, -1), dims=(0, 1)) * X}


def tile_repeat(X):
    return {"T": X.repeat(2, 3) * 2.0, "R": torch.sin(X.repeat_interleave(3, 1))}


def reverse_axis(X):
    xf = X.flip(1)
    return {"Y": xf - X * xf}


def gather_axis(X, I, S):
    return {"G": X.gather(1, I) * S, "O": X.scatter_add(1, I, S * S)}


def one_hot_scale(T, S, E):
    y = F.one_hot(T, 6).to(S.dtype) * (S * S)[:, None]
    return {"Y": y, "Z": y @ E}


def resize_align(X):
    return {"Y": F.interpolate(X[None, None], size=(5, 7), mode="bilinear", align_corners=True)[0, 0]}


def scan_rev_excl(X):
    x2 = X * X
    excl = torch.cat([torch.zeros(2, 1, dtype=X.dtype), torch.cumsum(x2, 1)[:, :-1]], 1)
    return {"R": torch.cumsum(X.flip(1), 1).flip(1), "E": excl}


def scan_two_states(X, C):
    a, b = X[0], torch.zeros((), dtype=X.dtype)
    As, Bs = [a], [b]
    for t in range(1, 6):
        a, b = a * C[0] - b * 0.3, a * 0.3 + b * C[0] + X[t]
        As.append(a)
        Bs.append(b)
    return {"A": torch.stack(As), "B": torch.stack(Bs)}


def lstm_cell(X, U, Wd):
    xu = X @ U.T
    h = torch.zeros(4, dtype=X.dtype)
    c = torch.zeros(4, dtype=X.dtype)
    Hs, Cs = [], []
    for t in range(5):
        i = torch.sigmoid(xu[t, 0:4] + Wd[0:4] * h)
        f = torch.sigmoid(xu[t, 4:8] + Wd[4:8] * h)
        g = torch.tanh(xu[t, 8:12] + Wd[8:12] * h)
        o = torch.sigmoid(xu[t, 12:16] + Wd[12:16] * h)
        c = f * c + i * g
        h = o * torch.tanh(c)
        Hs.append(h)
        Cs.append(c)
    return {"H": torch.stack(Hs), "C": torch.stack(Cs)}


def split_tail(X, W):
    y = X * W + 1.0
    return {"Y": y, "S": (y * y).sum(1)}


def init_first(X):
    return {"Y": (X * X).sum(1), "M": X.amin(1)}


def min_ties(X):
    return {"M": (X * 2.0).amin(1)}


def matvec_sym(m, n, A, V):
    return {"Y": torch.relu(A @ V), "M": A.amax(1)}


def i64_conv(X, W):
    return {"Y": F.conv1d(X[None, None], W[None, None], stride=2)[0, 0]}


def f64_softplus_mm(A, B):
    return {"C": A @ F.softplus(B, beta=2.0, threshold=20.0)}


def attn_probs(Q, K, V):
    p = torch.softmax(Q @ K.T * 0.5, 1)
    return {"P": p, "O": p @ V}


def layernorm_row(X, G):
    return {"Y": F.layer_norm(X, (6,), eps=1e-5) * torch.where(G > 0, G, torch.ones_like(G))}


def intrinsics(p, X):
    return {"Y": torch.log2(X) * torch.log10(X + 1.0) + torch.erf(X) * torch.tan(X * 0.5) + X ** p
            + torch.trunc(X * 3.0) * X}


def maxpool_idx(X, V):
    y, a = F.max_pool2d(X[None, None], 3, stride=2, padding=1, return_indices=True)
    y, a = y[0, 0], a[0, 0]
    return {"Y": y, "A": a.to(torch.int32), "Z": y * V[a]}


def masked_attn_sum(Q, K):
    e = torch.exp(Q @ K.T)
    return {"S": (e * torch.tril(torch.ones(4, 4, dtype=Q.dtype))).sum(1)}


def rnn_state_out(X, W):
    h, out = torch.zeros(3, dtype=X.dtype), []
    for t in range(6):
        h = torch.tanh(h * W + X[t])
        out.append(h * 2.0)
    return {"H": torch.stack(out)}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
