#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider11/outsider11.tir, checked by the zoo's check.py.

    outsider11_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64, scalars as
0-d tensors) and returns a dict output name -> tensor, written from the PyTorch definitions
(torch.nn.functional, torch.distributions, the torchvision roi_align algorithm), not from the
.tir.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def _causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


def mqa_alibi_causal(Q, K, V, Sl):
    t = Q.shape[1]
    pos = torch.arange(t, dtype=Q.dtype)
    s = torch.einsum("hid,jd->hij", Q, K) * 0.57735027 + Sl[:, None, None] * (pos[None, :] - pos[:, None])
    p = s.masked_fill(_causal_mask(t), float("-inf")).softmax(-1)
    return {"O": torch.einsum("hij,jd->hid", p, V)}


def _rotate_half(x, c, s):
    x1, x2 = x[:, :2], x[:, 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], 1)


def rope_qk_score(Q, K, Cs, Sn):
    return {"S": _rotate_half(Q, Cs, Sn) @ _rotate_half(K, Cs, Sn).T * 0.5}


def softcap_attn(Q, K, V):
    s = 2.0 * torch.tanh(Q @ K.T / 2.0)
    return {"O": s.softmax(-1) @ V}


def embbag_mean(W, I, Off, G):
    rows = []
    for b in range(3):
        lo, hi = int(Off[b]), int(Off[b + 1])
        rows.append(W[I[lo:hi]].mean(0) if lo < hi else torch.zeros(3, dtype=W.dtype))
    return {"Y": torch.stack(rows) * G}


def segment_max_csr(X, Off):
    rows = []
    for s in range(3):
        lo, hi = int(Off[s]), int(Off[s + 1])
        rows.append((X[lo:hi] * 3.0).amax(0) if lo < hi else torch.zeros(2, dtype=X.dtype))
    return {"Y": torch.stack(rows)}


def spmm_csr(Rp, Ci, V, X):
    rows = []
    for r in range(3):
        lo, hi = int(Rp[r]), int(Rp[r + 1])
        rows.append((V[lo:hi, None] * X[Ci[lo:hi]]).sum(0) if lo < hi else torch.zeros(2, dtype=X.dtype))
    return {"Y": torch.stack(rows)}


def bincount_w_log(I, Wt, X):
    h = torch.zeros(4, dtype=X.dtype).index_add(0, I, Wt * X)
    return {"Y": torch.log1p(h * h)}


def im2col_matmul(X, W):
    return {"Y": F.conv2d(X[None], W.reshape(3, 2, 2, 2))[0].reshape(3, 16)}


def convt2d_outpad(X, W, B):
    return {"Y": F.conv_transpose2d(X[None], W, B, stride=2, padding=1, output_padding=1)[0]}


def dwconv2d_dil(X, W):
    return {"Y": F.conv2d(X[None], W[:, None], padding=2, dilation=2, groups=3)[0]}


def _bilinear(fm, y, x):
    # torchvision's roi_align bilinear_interpolate (samples are inside the map here)
    h, w = fm.shape[1:]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return torch.zeros(fm.shape[0], dtype=fm.dtype)
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    return hy * hx * fm[:, y0, x0] + hy * lx * fm[:, y0, x1] + ly * hx * fm[:, y1, x0] + ly * lx * fm[:, y1, x1]


def roi_align2d(Fm, Org, Sz):
    # torchvision.ops.roi_align(Fm[None], boxes (x1, y1, x1 + w, y1 + h), 2, 1.0, 2, aligned=False)
    out = torch.zeros(2, 2, 2, 2, dtype=Fm.dtype)
    for r in range(2):
        x1, y1 = float(Org[r, 0]), float(Org[r, 1])
        rw, rh = max(float(Sz[r, 0]), 1.0), max(float(Sz[r, 1]), 1.0)
        bh, bw = rh / 2, rw / 2
        for ph in range(2):
            for pw in range(2):
                acc = 0
                for iy in range(2):
                    for ix in range(2):
                        y = y1 + ph * bh + (iy + 0.5) * bh / 2
                        x = x1 + pw * bw + (ix + 0.5) * bw / 2
                        acc = acc + _bilinear(Fm, y, x)
                out[r, :, ph, pw] = acc / 4
    return {"Y": out}


def lp_pool2d(X):
    return {"Y": F.lp_pool2d(X[None], 2, 3, stride=1)[0]}


def conv1d_replicate(X, W):
    return {"Y": F.conv1d(F.pad(X[None], (2, 2), mode="replicate"), W, dilation=2)[0]}


def sobel_mag(X):
    xp = F.pad(X[None, None], (1, 1, 1, 1), mode="replicate")
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=X.dtype)
    gx = F.conv2d(xp, kx[None, None])[0, 0]
    gy = F.conv2d(xp, kx.T.contiguous()[None, None])[0, 0]
    return {"Y": torch.sqrt(gx * gx + gy * gy + 1e-6)}


def voxel_shuffle(X, Sc):
    return {"Y": torch.sin(X.reshape(2, 2, 2, 2, 2, 2).permute(3, 0, 4, 1, 5, 2).reshape(4, 4, 4)) * Sc}


def kl_log_target(X, Tl):
    return {"L": F.kl_div(F.log_softmax(X, 1), Tl, reduction="batchmean", log_target=True).reshape(1)}


def ce_prob_targets(X, P):
    return {"L": F.cross_entropy(X, P, label_smoothing=0.2).reshape(1)}


def info_nce(A, B):
    s = A @ B.T / 0.5
    t = torch.arange(4)
    return {"L": ((F.cross_entropy(s, t) + F.cross_entropy(s.T, t)) / 2).reshape(1)}


def chamfer(P, Q):
    d = ((P[:, None] - Q[None]) ** 2).sum(-1)
    return {"L": (d.min(1).values.mean() + d.min(0).values.mean()).reshape(1)}


def mdn_nll(Pi, Mu, Ls, Yt):
    comp = torch.distributions.Normal(Mu, torch.exp(Ls)).log_prob(Yt[:, None])
    return {"L": (-torch.logsumexp(F.log_softmax(Pi, 1) + comp, 1).mean()).reshape(1)}


def tv_loss(X):
    return {"L": ((X[:, 1:] - X[:, :-1]).abs().sum() + (X[:, :, 1:] - X[:, :, :-1]).abs().sum()).reshape(1)}


def shrinks(X):
    return {"S1": F.softshrink(X, 0.5), "S2": F.hardshrink(X, 0.5), "S3": F.tanhshrink(X)}


def swiglu(X, W1, W3, W2):
    return {"Y": (F.silu(X @ W1) * (X @ W3)) @ W2}


def gumbel_softmax(X, G):
    y = (X + G) / 0.7
    return {"P": y.softmax(-1), "I": y.argmax(-1)}


def rnn2_stacked(X, W1, U1, W2, U2):
    h1 = torch.zeros(3, dtype=X.dtype)
    h2 = torch.zeros(2, dtype=X.dtype)
    out = []
    for t in range(5):
        h1 = torch.tanh(W1 @ X[t] + U1 @ h1)
        h2 = torch.tanh(W2 @ h1 + U2 @ h2)
        out.append(h2)
    return {"H2": torch.stack(out)}


def linrec_tv_sym(n, A, B, H0):
    h = H0
    hs = []
    for t in range(int(n)):
        h = A[t] * h + B[t]
        hs.append(h)
    H = torch.stack(hs)
    return {"H": H, "L": (H[:, 0] * H[:, 1]).sum().reshape(1)}


def gae_scan(R, Vl, Dn):
    nd = 1.0 - Dn.to(R.dtype)
    adv = [None] * 5
    nxt = torch.zeros((), dtype=R.dtype)
    for t in reversed(range(5)):
        delta = R[t] + 0.9 * Vl[t + 1] * nd[t] - Vl[t]
        nxt = delta + 0.9 * 0.8 * nd[t] * nxt
        adv[t] = nxt
    A = torch.stack(adv)
    return {"Ad": A, "Rt": A + Vl[:5]}


def kalman_1d(Z, Qn, Rn):
    x = torch.zeros((), dtype=Z.dtype)
    p = torch.ones((), dtype=Z.dtype)
    xs = []
    for t in range(6):
        pp = p + Qn[0]
        k = pp / (pp + Rn[0])
        x = x + k * (Z[t] - x)
        p = (1 - k) * pp
        xs.append(x)
    return {"Xs": torch.stack(xs)}


def f16_softmax(X, W):
    return {"P": (X * W).softmax(-1)}


def f64_logsig_cumsum(X, W):
    return {"Y": torch.cumsum(W * F.logsigmoid(X), 0)}


def minmax_norm(X):
    mn, mx = X.amin(1, keepdim=True), X.amax(1, keepdim=True)
    return {"Y": (X - mn) / (mx - mn + 0.001)}


def inplace_out_thrice(X, A):
    y = X * A
    y = torch.cat([y[:2], y[2:] + y[:2]])
    return {"Y": F.silu(y)}


def sym_lse_axis0(n, X):
    return {"Y": torch.logsumexp(X, 0)}


def smoothstep_chain(X, W):
    t = (X + 1) / 2
    s = torch.where(X < -1, torch.zeros_like(X), torch.where(X > 1, torch.ones_like(X), t * t * (3 - 2 * t)))
    p = torch.where(X < 0, torch.where(X < -1.5, -0.1 * X, X * X), torch.where(X < 1.5, torch.sin(X), 1.5 * torch.cos(X)))
    return {"Y": (s + p) * W}


def sched_mm_gelu(A, B, Bs):
    return {"Y": F.gelu(A @ B + Bs, approximate="tanh")}


def sched_layernorm(X, G, B):
    return {"Y": F.layer_norm(X, (6,), G, B, eps=1e-5)}


def sched_rfactor_norm(X):
    return {"Y": X.norm(dim=1)}


def anchored_scan(X, K):
    ys = [X[:, 0]]
    for t in range(1, 6):
        ys.append(ys[-1] + K * (ys[0] - ys[-1]) + X[:, t])
    return {"Y": torch.stack(ys, 1)}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
