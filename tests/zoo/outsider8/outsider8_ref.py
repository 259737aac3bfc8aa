#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider8/outsider8.tir, checked by the zoo's check.py.

    outsider8_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors, scalars as 0-d tensors) and
returns a dict output name -> tensor, written from the PyTorch definitions (torch.nn.functional,
torch.fft, torch.linalg where an operator exists), not from the .tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def ctc_loss1(X, Lab):
    lp = F.log_softmax(X, 1)[:, None, :]  # (T, N=1, C)
    loss = F.ctc_loss(lp, Lab[None], torch.tensor([6]), torch.tensor([3]), blank=0, reduction="sum")
    return {"Loss": loss.reshape(1)}


def viterbi3(E, T, Pi):
    d = Pi + E[0]
    ds = [d]
    for t in range(1, 5):
        d = (d[:, None] + T).max(0).values + E[t]
        ds.append(d)
    D = torch.stack(ds)
    return {"Best": D[4].max().reshape(1), "D": D}


def hmm_forward(LB, LA, LPi):
    la = LPi + LB[0]
    for t in range(1, 5):
        la = torch.logsumexp(la[:, None] + LA, 0) + LB[t]
    return {"LL": torch.logsumexp(la, 0).reshape(1)}


def iir2(X, Bc, Ac):
    ys = []
    for t in range(6):
        y = Bc[:, 0] * X[:, t]
        if t >= 1:
            y = y + Bc[:, 1] * X[:, t - 1] - Ac[:, 0] * ys[t - 1]
        if t >= 2:
            y = y - Ac[:, 1] * ys[t - 2]
        ys.append(y)
    return {"Y": torch.stack(ys, 1)}


def summed_area(X):
    s = X.cumsum(1).cumsum(0)
    box = F.avg_pool2d(X[None, None], 2, stride=1)[0, 0] * 4.0
    return {"Y": box, "S": s}


def clenshaw(C, X):
    th = torch.acos(X)
    return {"Y": sum(C[k] * torch.cos(k * th) for k in range(5))}


def euler_ode(h, Z0, W, Bv):
    z, zs = Z0, []
    for _ in range(4):
        z = z + h * (W @ torch.tanh(z) + Bv)
        zs.append(z)
    return {"Z": torch.stack(zs)}


def welford(X):
    n = torch.arange(1, 7, dtype=X.dtype)[:, None]
    mn = X.cumsum(0) / n
    v = torch.stack([X[:t + 1].var(0, unbiased=False) for t in range(6)])
    return {"Mn": mn, "V": v}


def newton_sqrt(X):
    y, ys = (1.0 + X) * 0.5, []
    for _ in range(4):
        y = 0.5 * (y + X / y)
        ys.append(y)
    return {"Y": torch.stack(ys)}


def sinkhorn(eps, C, Am, Bm):
    K = torch.exp(-C / eps)
    v = torch.ones(4, dtype=C.dtype)
    for _ in range(3):
        u = Am / (K @ v)
        v = Bm / (K.T @ u)
    return {"P": u[:, None] * K * v[None, :]}


def rope(X, Fr):
    t = torch.arange(4, dtype=X.dtype)[:, None]
    ang = t * Fr[None, :]
    c, s = torch.cos(ang), torch.sin(ang)
    x0, x1 = X[:, 0::2], X[:, 1::2]
    return {"Y": torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).reshape(4, 6)}


def alibi_attn(Q, K, V, Sl):
    i = torch.arange(4)[:, None]
    j = torch.arange(4)[None, :]
    s = Q @ K.transpose(1, 2) * 0.57735026 - Sl[:, None, None] * (i - j).to(Q.dtype)
    s = s.masked_fill(j > i, float("-inf"))
    return {"O": torch.softmax(s, -1) @ V}


def lstm_peephole(X, U, Wr, Pp):
    xu = X @ U.T
    h = torch.zeros(3, dtype=X.dtype)
    c = torch.zeros(3, dtype=X.dtype)
    hs, cs = [], []
    for t in range(4):
        ig = torch.sigmoid(xu[t, 0:3] + Wr[0:3] * h + Pp[0:3] * c)
        fg = torch.sigmoid(xu[t, 3:6] + Wr[3:6] * h + Pp[3:6] * c)
        gg = torch.tanh(xu[t, 6:9] + Wr[6:9] * h)
        c = fg * c + ig * gg
        h = torch.sigmoid(xu[t, 9:12] + Wr[9:12] * h + Pp[6:9] * c) * torch.tanh(c)
        hs.append(h)
        cs.append(c)
    return {"H": torch.stack(hs), "C": torch.stack(cs)}


def mlp_residual(X, W1, B1, W2, B2):
    return {"Y": X + F.linear(F.relu(F.linear(X, W1, B1)), W2, B2)}


def mixed_f64_acc(X, W):
    s = X @ W
    return {"Y": torch.tanh(s) * s}


def ce_mid_i16(X, Lab, Wc):
    logp = F.log_softmax(X, 1)
    picked = logp.gather(1, Lab[:, None, :]).squeeze(1)
    w = Wc[Lab]
    return {"Loss": (-(w * picked).sum() / w.sum()).reshape(1)}


def kl_logsm(A, B):
    x, t = F.log_softmax(A, 1), F.log_softmax(B, 1)
    return {"Kl": F.kl_div(x, t, reduction="batchmean", log_target=True).reshape(1)}


def giou_loss(Pxy, Pwh, Txy, Twh):
    p1, p2 = Pxy, Pxy + Pwh
    t1, t2 = Txy, Txy + Twh
    iwh = (torch.minimum(p2, t2) - torch.maximum(p1, t1)).clamp(min=0)
    inter = iwh[:, 0] * iwh[:, 1]
    uni = Pwh[:, 0] * Pwh[:, 1] + Twh[:, 0] * Twh[:, 1] - inter
    cwh = torch.maximum(p2, t2) - torch.minimum(p1, t1)
    ca = cwh[:, 0] * cwh[:, 1]
    giou = inter / uni - (ca - uni) / ca
    return {"L": (1 - giou).mean().reshape(1)}


def cdist_p1(X, Yb):
    return {"D": torch.cdist(X, Yb, p=1)}


def convt1d_mod(X, W):
    return {"Y": F.conv_transpose1d(X[None], W, stride=3, padding=1, output_padding=1)[0]}


def reflect_abs(X, Wt):
    return {"Y": F.pad(X[None], (3, 3), mode="reflect")[0] * Wt}


def rev_stride_sym(n, X):
    k = (int(n) + 1) // 2
    return {"Y": X.flip(0)[::2] * X[:k] + X.flip(0)[:k]}


def roll_sym(n, s, X, W):
    return {"Y": torch.roll(X, int(s)) * W + X}


def scatter_gather_nd(Base, Idx, U):
    yb = Base.index_put((Idx[:, 0], Idx[:, 1]), U * U, accumulate=True)
    return {"Z": yb * yb, "G": Base[Idx[:, 0], Idx[:, 1]] * U + yb[Idx[:, 1], Idx[:, 0]]}


def embbag_max(W, I, Bg):
    out = []
    for b in range(3):
        rows = torch.cat([W[I[Bg == b]], torch.full((1, 3), -10.0, dtype=W.dtype)])
        out.append(rows.max(0).values)
    return {"Y": torch.stack(out)}


def upsample2_parity(X):
    return {"Y": F.interpolate(X[None], scale_factor=2, mode="bilinear", align_corners=False)[0]}


def multi_out_partial(X):
    mx, am = X.max(1)
    return {"Mx": mx, "Am": am, "Cnt": (X > 0).sum(1).to(X.dtype), "Y": torch.exp(X - mx[:, None])}


def cummean_f64(n, X):
    return {"Y": X.cumsum(0) / torch.arange(1, int(n) + 1, dtype=X.dtype)[:, None]}


def complex_mul(A, B):
    z = torch.view_as_real(torch.view_as_complex(A.contiguous()) * torch.view_as_complex(B.contiguous()))
    return {"Z": z, "Mag": torch.sqrt((z * z).sum(1) + 1e-6)}


def rank_hinge(S, Rk):
    pair = (Rk[:, None] > Rk[None, :]).to(S.dtype)
    return {"L": (F.relu(0.3 - (S[:, None] - S[None, :])) * pair).sum().reshape(1)}


def rbf_kernel(X, Zc, G):
    d = ((X[:, None, :] - Zc[None, :, :]) ** 2).sum(-1)
    return {"Kr": torch.exp(-G[0] * d)}


def prefix_segments(X, Sg, Eg):
    c = (X * X).cumsum(0)
    return {"Y": c[Eg] - torch.where(Sg > 0, c[Sg - 1], torch.zeros((), dtype=X.dtype))}


def gather_wrap(X, I, W):
    return {"Y": X[I % 5] * W[:, None]}


def rfft8(X):
    f = torch.fft.rfft(X)
    return {"Re": f.real, "Im": f.imag}


def bce_logits(X, T):
    return {"L": F.binary_cross_entropy_with_logits(X, T).reshape(1)}


def layernorm_2d(X, G, Bt):
    return {"Y": F.layer_norm(X, (3, 4), G, Bt, eps=1e-5)}


def dwsep_sym(n, X, Wd, Wp):
    d = F.conv1d(X[None], Wd[:, None, :], padding=1, groups=2)
    return {"Y": F.conv1d(d, Wp[:, :, None])[0]}


def maxpool1d_dil(X):
    return {"Y": F.max_pool1d(X[None], 3, stride=2, padding=1, dilation=2)[0]}


def triu_pack(X):
    iu = torch.triu_indices(4, 4)
    return {"Y": X[iu[0]] * X[iu[1]] * (1 + iu[1] - iu[0]).to(X.dtype)}


def softmax_entropy(X):
    return {"H": -(torch.softmax(X, 1) * F.log_softmax(X, 1)).sum(1)}


def clamp_pieces(X, Lo, W):
    return {"Y": torch.clamp(X, min=Lo, max=torch.full_like(X, 0.5)) + (X - W).abs() * 0.1
            + torch.maximum(X, W) * torch.minimum(X, W)}


def kron_out(A, B):
    return {"Y": torch.kron(A, B)}


def diag_offsets(X, V):
    return {"D": torch.diagonal(X, offset=-1, dim1=1, dim2=2) * V[:, 1:], "E": X + torch.diag_embed(V)}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
