#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider16/outsider16.tir, checked by the zoo's check.py.

    outsider16_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64) and returns a
dict output name -> tensor, written from the PyTorch / paper definitions (torch.sort,
torch.linalg.cholesky, torch.stft, F.conv1d / conv2d, index_add, ...), not from the .tir.
The refused functions (cholesky_inplace, ssim_fused_moments, crf_nll_maxred, cholesky_loops,
gauss_seidel) have none.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def sparsemax(Z):
    zs, _ = torch.sort(Z, dim=1, descending=True)
    k = torch.arange(1, Z.shape[1] + 1, dtype=Z.dtype)
    cs = zs.cumsum(1)
    sup = 1 + k * zs > cs
    kz = sup.sum(1, keepdim=True)
    tau = (cs.gather(1, kz - 1) - 1) / kz.to(Z.dtype)
    return {"P": torch.clamp(Z - tau, min=0)}


def sort_rank(X, W):
    return {"Y": torch.sort(X).values * W}


def median_rank(X, G):
    return {"M": torch.median(X, dim=1).values * G}


def newton_schulz(B):
    A = 2 * torch.eye(3, dtype=B.dtype) + 0.3 * B
    X = 0.4 * A.T
    for _ in range(3):
        X = X @ (2 * torch.eye(3, dtype=B.dtype) - A @ X)
    return {"Y": X}


def charbonnier_psnr(X, Y):
    d = X - Y
    return {"C": torch.sqrt(d * d + 1e-6).mean().reshape(1),
            "P": (10 * torch.log10(1 / (d * d).mean())).reshape(1)}


def center_loss(X, Lbl, Cn):
    return {"L": (0.5 * ((X - Cn[Lbl]) ** 2).sum() / 6).reshape(1)}


def cosface_loss(X, W, Lbl):
    cos = F.normalize(X, dim=1, eps=0) @ F.normalize(W, dim=1, eps=0).T
    logits = 4.0 * (cos - 0.35 * F.one_hot(Lbl, 3).to(X.dtype))
    return {"L": F.cross_entropy(logits, Lbl).reshape(1)}


def cholesky_logdet(B):
    A = B @ B.T + 4 * torch.eye(4, dtype=B.dtype)
    L = torch.linalg.cholesky(A)
    return {"L": L, "LD": torch.logdet(A).reshape(1)}


def ssim_loss(X, Y):
    box = lambda t: F.avg_pool2d(t[None, None], 3, stride=1)[0, 0]  # noqa: E731
    mx, my = box(X), box(Y)
    sxx, syy, sxy = box(X * X) - mx * mx, box(Y * Y) - my * my, box(X * Y) - mx * my
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    s = (2 * mx * my + c1) * (2 * sxy + c2) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return {"L": (1 - s.mean()).reshape(1)}


def wavenet_gated(X, Wf, Wg, Wr):
    xp = F.pad(X[None], (2, 0))
    z = torch.tanh(F.conv1d(xp, Wf, dilation=2)) * torch.sigmoid(F.conv1d(xp, Wg, dilation=2))
    return {"Y": X + F.conv1d(z, Wr[:, :, None])[0]}


def cost_volume(F1, F2):
    p = F.pad(F2, (1, 1, 1, 1))
    maps = [(F1 * p[:, 1 + dy:6 + dy, 1 + dx:6 + dx]).mean(0) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    return {"C": F.leaky_relu(torch.stack(maps), 0.1)}


def temporal_shift(X, W):
    s = X.clone()
    s[:, 0] = torch.cat([X[1:, 0], torch.zeros_like(X[:1, 0])])
    s[:, 1] = torch.cat([torch.zeros_like(X[:1, 1]), X[:-1, 1]])
    return {"Y": torch.einsum("oc,tcp->top", W, s)}


def maxout(X, W, B):
    return {"Y": (X @ W.T + B).reshape(3, 3, 2).amax(2)}


def highway(X, Wh, Bh, Wt, Bt):
    t = torch.sigmoid(X @ Wt.T + Bt)
    return {"Y": t * torch.relu(X @ Wh.T + Bh) + (1 - t) * X}


def _squash(s):
    n2 = (s * s).sum(-1, keepdim=True)
    return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-7)


def capsule_squash(S):
    return {"V": _squash(S)}


def capsule_routing(U):
    b = torch.zeros(4, 2, dtype=U.dtype)
    for it in range(2):
        c = b.softmax(1)
        v = _squash((c[:, :, None] * U).sum(0))
        if it == 0:
            b = b + (U * v[None]).sum(2)
    return {"V": v}


def crf_nll(E, Tr, Tg):
    alpha = E[0]
    for t in range(1, 5):
        alpha = torch.logsumexp(alpha[:, None] + Tr, 0) + E[t]
    gold = E[torch.arange(5), Tg].sum() + Tr[Tg[:-1], Tg[1:]].sum()
    return {"L": (torch.logsumexp(alpha, 0) - gold).reshape(1)}


def emd1d(P, Q):
    d = P / P.sum(1, keepdim=True) - Q / Q.sum(1, keepdim=True)
    return {"W": d.cumsum(1).abs().sum(1)}


def soft_argmax2d(H):
    p = (2 * H).reshape(2, -1).softmax(1).reshape(2, 4, 5)
    xs = torch.arange(5, dtype=H.dtype) / 4
    ys = torch.arange(4, dtype=H.dtype) / 3
    return {"K": torch.stack([(p * xs[None, None]).sum((1, 2)), (p * ys[None, :, None]).sum((1, 2))], 1)}


def bilinear_pool(X):
    g = X @ X.T / 6
    z = torch.sign(g) * torch.sqrt(g.abs() + 1e-5)
    return {"Y": F.normalize(z.reshape(-1), dim=0, eps=1e-12).reshape(3, 3)}


def dct2_ortho(X):
    n = torch.arange(8, dtype=X.dtype)
    C = torch.cos(math.pi / 8 * (n[None, :] + 0.5) * n[:, None])
    C[0] *= math.sqrt(1 / 8)
    C[1:] *= math.sqrt(2 / 8)
    return {"Y": torch.tanh(X) @ C.T}


def stft_mag(X):
    s = torch.stft(X, 8, hop_length=4, window=torch.hann_window(8, dtype=X.dtype), center=False,
                   return_complex=True)
    return {"M": s.abs()}


def additive_attention(Q, K, V, Wq, Wk, Va):
    s = (torch.tanh((Q @ Wq.T)[:, None, :] + (K @ Wk.T)[None, :, :]) * Va).sum(-1)
    return {"O": s.softmax(1) @ V}


def moe_top1(X, Wg, We):
    p = (X @ Wg.T).softmax(1)
    pm, e = p.max(1)
    return {"Y": pm[:, None] * torch.einsum("nod,nd->no", We[e], X)}


def _box1(t):
    s = F.avg_pool1d(t[None, None], 3, stride=1, padding=1, count_include_pad=False)
    return s[0, 0]


def guided_filter1d(I, P):
    mi, mp = _box1(I), _box1(P)
    a = (_box1(I * P) - mi * mp) / (_box1(I * I) - mi * mi + 0.01)
    b = mp - a * mi
    return {"Qo": _box1(a) * I + _box1(b)}


def box_decode(Anc, Dl):
    cx, cy, w, h = Anc.unbind(1)
    dx, dy = Dl[:, 0] / 10, Dl[:, 1] / 10
    dw = torch.clamp(Dl[:, 2] / 5, max=math.log(1000.0 / 16))
    dh = torch.clamp(Dl[:, 3] / 5, max=math.log(1000.0 / 16))
    pcx, pcy, pw, ph = dx * w + cx, dy * h + cy, torch.exp(dw) * w, torch.exp(dh) * h
    return {"Bx": torch.stack([pcx - 0.5 * pw, pcy - 0.5 * ph, pcx + 0.5 * pw, pcy + 0.5 * ph], 1)}


def rwkv_wkv(K, V, W, U):
    a = torch.zeros(3, dtype=K.dtype)
    b = torch.zeros(3, dtype=K.dtype)
    ys = []
    for t in range(6):
        eu = torch.exp(U + K[t])
        ys.append((a + eu * V[t]) / (b + eu))
        a = torch.exp(-W) * a + torch.exp(K[t]) * V[t]
        b = torch.exp(-W) * b + torch.exp(K[t])
    return {"Y": torch.stack(ys)}


def retention(Q, K, V, G):
    n = torch.arange(5, dtype=Q.dtype)
    diff = n[:, None] - n[None, :]
    D = torch.where(diff >= 0, G[0] ** diff.clamp(min=0), torch.zeros_like(diff))
    return {"O": (Q @ K.T * 0.5 * D) @ V}


def gat_layer(Hn, W, As, Ad, Src, Dst):
    z = Hn @ W.T
    e = torch.exp(F.leaky_relu((z @ As)[Src] + (z @ Ad)[Dst], 0.2))
    den = torch.zeros(4, dtype=Hn.dtype).index_add(0, Dst, e)
    return {"Out": torch.zeros(4, 3, dtype=Hn.dtype).index_add(0, Dst, (e / den[Dst])[:, None] * z[Src])}


def gcn_norm(X, W, Ew, Src, Dst):
    xw = X @ W
    deg = torch.ones(5, dtype=X.dtype).index_add(0, Dst, Ew)
    norm = Ew / torch.sqrt(deg[Src] * deg[Dst])
    return {"Out": (xw / deg[:, None]).index_add(0, Dst, norm[:, None] * xw[Src])}


def transe(Ent, Rel, Hd, Rl, Tp, Tn):
    hr = Ent[Hd] + Rel[Rl]
    dp = torch.sqrt(((hr - Ent[Tp]) ** 2).sum(1) + 1e-6)
    dn = torch.sqrt(((hr - Ent[Tn]) ** 2).sum(1) + 1e-6)
    return {"L": F.relu(1 + dp - dn).mean().reshape(1)}


def sgns_loss(Vin, Vout, Cw, Ow, Ng):
    vc = Vin[Cw]
    pos = F.logsigmoid((Vout[Ow] * vc).sum(1))
    neg = F.logsigmoid(-(Vout[Ng] * vc[:, None]).sum(2)).sum(1)
    return {"L": (-(pos + neg).sum()).reshape(1)}


def fm_interaction(X, W0, Wl, Vf):
    s = X @ Vf
    s2 = (X * X) @ (Vf * Vf)
    return {"Y": W0 + X @ Wl + 0.5 * (s * s - s2).sum(1)}


def dcn_cross(X0, W, B):
    x = X0
    for l in range(2):
        x = X0 * (x @ W[l])[:, None] + B[l] + x
    return {"X2": x}


def ppo_clip(Lp, Lo, Adv):
    r = torch.exp(Lp - Lo)
    return {"L": (-torch.min(r * Adv, torch.clamp(r, 0.8, 1.2) * Adv).mean()).reshape(1)}


def quantile_huber(Th, Tt):
    tau = (2 * torch.arange(4, dtype=Th.dtype) + 1) / 8
    u = Tt[:, None, :] - Th[:, :, None]
    hub = F.huber_loss(u, torch.zeros_like(u), reduction="none", delta=1.0)
    w = (tau[None, :, None] - (u.detach() < 0).to(Th.dtype)).abs()
    return {"L": (w * hub).mean(2).sum(1).mean().reshape(1)}


def c51_projection(P, R):
    z = torch.arange(5, dtype=P.dtype) - 2
    b = torch.clamp(R[:, None] + 0.9 * z[None], -2, 2) + 2
    lo, up = b.detach().floor().long(), b.detach().ceil().long()
    eq = (lo == up).to(P.dtype)
    m = torch.zeros(2, 5, dtype=P.dtype)
    m = m.scatter_add(1, lo, P * (up.to(P.dtype) - b + eq))
    m = m.scatter_add(1, up, P * (b - lo.to(P.dtype)))
    return {"M": m}


def lanczos_resample(S, Pos):
    x = Pos[:, None] - torch.arange(8, dtype=S.dtype)[None]
    w = torch.where(x.abs() < 2, torch.sinc(x) * torch.sinc(x / 2), torch.zeros_like(x))
    return {"Y": w @ S}


def aspp(X, W1, W2, Wp):
    pb = Wp @ X.mean((1, 2))
    acc = F.conv2d(X[None], W1, padding=1) + F.conv2d(X[None], W2, padding=2, dilation=2)
    return {"Y": torch.relu(acc[0] + pb[:, None, None])}


def adain(Cn, St):
    mc, ms = Cn.mean(2, keepdim=True), St.mean(2, keepdim=True)
    sc = torch.sqrt(Cn.var(2, keepdim=True) + 1e-5)
    ss = torch.sqrt(St.var(2, keepdim=True) + 1e-5)
    return {"Y": ss * (Cn - mc) / sc + ms}


def se_block(X, W1, W2):
    g = torch.sigmoid(W2 @ torch.relu(W1 @ X.mean((1, 2))))
    return {"Y": X * g[:, None, None]}


def cbam_spatial(X, W):
    m = torch.stack([X.mean(0), X.amax(0)])
    a = torch.sigmoid(F.conv2d(m[None], W[None], padding=1)[0, 0])
    return {"Y": X * a}


def argsort_gather(X, V):
    p = torch.argsort(X, stable=True)
    return {"Y": V[p] * X[p][:, None]}


def jacobi_solve(A, Bv):
    d = torch.diagonal(A) + 4
    r = 0.2 * (A - torch.diag(torch.diagonal(A)))
    xs = [torch.zeros(4, dtype=A.dtype)]
    for _ in range(3):
        xs.append((Bv - r @ xs[-1]) / d)
    return {"X": torch.stack(xs)}


sched_cost_volume = cost_volume
sched_ssim_loss = ssim_loss
sched_rwkv_wkv = rwkv_wkv

REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
