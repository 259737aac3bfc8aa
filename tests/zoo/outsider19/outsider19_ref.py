#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider19/outsider19.tir, checked by the zoo's check.py.

    outsider19_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64) and returns a
dict output name -> tensor, written from the PyTorch / TVM definitions (F.conv2d on a dilated
input, F.adaptive_max_pool3d, F.interpolate, F.conv_transpose2d, torch.linalg.solve,
torch.fft.fft2, F.kl_div, ...) or explicit loops after the TVM topi / torchvision / Caffe /
paper sources where torch has no such operator, not from the .tir.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def dilate_conv2d(X, W):
    d = X.new_zeros(2, 5, 5)
    d[:, ::2, ::2] = X
    return {"Y": F.conv2d(d[None], W, padding=1)[0]}


def flownet_corr(F1, F2):
    # FlowNet / topi correlation: kernel 3, max displacement 2, stride2 2, normalised by
    # kernel_size^2 * channels
    f1 = F.pad(F1, (1, 1, 1, 1))  # index y + 1
    f2 = F.pad(F2, (3, 3, 3, 3))  # index y + 3
    out = []
    for dy in (-2, 0, 2):
        for dx in (-2, 0, 2):
            p = (f1 * f2[:, 2 + dy:8 + dy, 2 + dx:8 + dx]).sum(0)
            out.append(F.avg_pool2d(p[None, None], 3, stride=1)[0, 0] * 9 / 18)
    return {"C": torch.stack(out)}


def batch_to_space_nd(X, G):
    # (block 2 x 2, batch 1): X[(bh * 2 + bw), c, h, w] -> full[c, 2h + bh, 2w + bw], then crops
    full = X.reshape(2, 2, 2, 3, 3).permute(2, 3, 0, 4, 1).reshape(2, 6, 6)
    return {"Y": torch.tanh(full[:, 1:, :5] * G[:, None, None])}


def lrn_within_channel(X):
    m = F.avg_pool2d((X * X)[:, None], 3, stride=1, padding=1, count_include_pad=True)[:, 0]
    return {"Y": X / (1 + 0.5 * m) ** 0.75}


def adaptive_max_pool3d(X):
    return {"Y": F.adaptive_max_pool3d(X, (3, 2, 3))}


def resize_bicubic_hp(X):
    return {"Y": F.interpolate(X[None], size=(6, 6), mode="bicubic", align_corners=False)[0]}


def upsample3d_trilinear_hp(X):
    return {"Y": F.interpolate(X[None], size=(3, 4, 4), mode="trilinear", align_corners=False)[0]}


def conv2d_transpose_group(X, W):
    return {"Y": F.conv_transpose2d(X[None], W, stride=2, padding=1, output_padding=1, groups=2)[0]}


def mirror_pad_sym_conv(X, W, Bs):
    idx = torch.tensor([0, 0, 1, 2, 3, 3])  # numpy's pad mode "symmetric" by 1
    p = X[:, idx][:, :, idx]
    return {"Y": F.conv2d(p[None], W[:, None], Bs, groups=2)[0]}


def psroi_pool(X, R):
    # torchvision's ps_roi_pool CPU kernel (spatial_scale 1, pooled 2 x 2, output_dim 2)
    out = X.new_zeros(2, 2, 2, 2)
    for n in range(2):
        x1, y1, x2, y2 = (int(torch.round(R[n, i])) for i in range(4))
        bh, bw = max(y2 - y1, 1) / 2.0, max(x2 - x1, 1) / 2.0
        for c in range(2):
            for ph in range(2):
                for pw in range(2):
                    hs = min(max(math.floor(ph * bh) + y1, 0), 6)
                    he = min(max(math.ceil((ph + 1) * bh) + y1, 0), 6)
                    ws = min(max(math.floor(pw * bw) + x1, 0), 6)
                    we = min(max(math.ceil((pw + 1) * bw) + x1, 0), 6)
                    if he > hs and we > ws:
                        ch = (c * 2 + ph) * 2 + pw
                        out[n, c, ph, pw] = X[ch, hs:he, ws:we].sum() / ((he - hs) * (we - ws))
    return {"Y": out}


def box_iou_giou(Pa, Sa, Pb, Sb):
    # torchvision.ops.box_iou / generalized_box_iou on (x1, y1, x2, y2) boxes
    a = torch.cat([Pa, Pa + Sa], 1)
    b = torch.cat([Pb, Pb + Sb], 1)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area_a[:, None] + area_b[None, :] - inter
    iou = inter / union
    lti = torch.min(a[:, None, :2], b[None, :, :2])
    rbi = torch.max(a[:, None, 2:], b[None, :, 2:])
    whi = (rbi - lti).clamp(min=0)
    encl = whi[..., 0] * whi[..., 1]
    return {"Iou": iou, "Giou": iou - (encl - union) / encl}


def sddmm_spmm(Q, K, V, R, Cc):
    s = torch.sigmoid((Q[R] * K[Cc]).sum(1))
    return {"Y": Q.new_zeros(4, 2).index_add(0, R, s[:, None] * V[Cc])}


def segment_softmax(X, Sg):
    y = torch.empty_like(X)
    for s in range(3):
        m = Sg == s
        if m.any():
            y = y.index_put((m.nonzero()[:, 0],), torch.softmax(X[m], 0))
    return {"Y": y}


def unsorted_segment_max(X, Sg, W):
    xw = X * W
    rows = []
    for s in range(3):
        m = Sg == s
        rows.append(xw[m].amax(0) if m.any() else xw.new_full((2,), torch.finfo(torch.float32).min))
    return {"Y": torch.stack(rows)}


def lu_nopivot(A):
    # Doolittle without pivoting (torch.linalg.lu_factor pivots on the CPU)
    a = A + 4 * torch.eye(4, dtype=A.dtype)
    L = [[None] * 4 for _ in range(4)]
    U = [[None] * 4 for _ in range(4)]
    z, one = a.new_zeros(()), a.new_ones(())
    for k in range(4):
        for j in range(4):
            U[k][j] = a[k, j] - sum((L[k][m] * U[m][j] for m in range(k)), z) if j >= k else z
        for i in range(4):
            if i > k:
                L[i][k] = (a[i, k] - sum((L[i][m] * U[m][k] for m in range(k)), z)) / U[k][k]
            else:
                L[i][k] = one if i == k else z
    return {"L": torch.stack([torch.stack(r) for r in L]), "U": torch.stack([torch.stack(r) for r in U])}


def chol_solve(M, Bm):
    a = M @ M.T + 3 * torch.eye(3, dtype=M.dtype)
    return {"Xs": torch.cholesky_solve(Bm, torch.linalg.cholesky(a))}


def einsum_chain(A, B, C):
    return {"Y": torch.einsum("ij,jk,kl->il", A, B, C)}


def dft2_power(X):
    return {"P": torch.fft.fft2(X).abs() ** 2}


def biquad_df2t(X, Bc, Ac):
    ys = []
    for b in range(2):
        s1, s2, row = X.new_zeros(()), X.new_zeros(()), []
        for t in range(8):
            x = X[b, t]
            y = Bc[b, 0] * x + s1
            s1 = Bc[b, 1] * x - Ac[b, 0] * y + s2
            s2 = Bc[b, 2] * x - Ac[b, 1] * y
            row.append(y)
        ys.append(torch.stack(row))
    return {"Y": torch.stack(ys)}


def crf_marginals(E, Tr):
    # forward-backward in log space; the marginals are d log Z / d E (checked the other way too)
    T = E.shape[0]
    al = [E[0]]
    for t in range(1, T):
        al.append(E[t] + torch.logsumexp(al[-1][:, None] + Tr, 0))
    be = [E.new_zeros(3)]
    for t in range(T - 2, -1, -1):
        be.insert(0, torch.logsumexp(Tr + (E[t + 1] + be[0])[None, :], 1))
    logz = torch.logsumexp(al[-1], 0)
    return {"Pm": torch.exp(torch.stack(al) + torch.stack(be) - logz)}


def holt_linear(Y, Al, Bt):
    a, b = Al[0], Bt[0]
    level, trend = Y[0], Y[1] - Y[0]
    fc = [Y[0]]
    for t in range(1, 8):
        fc.append(level + trend)
        new_level = a * Y[t] + (1 - a) * (level + trend)
        trend = b * (new_level - level) + (1 - b) * trend
        level = new_level
    fc = torch.stack(fc)
    return {"Fc": fc, "Sse": ((Y - fc) ** 2).sum().reshape(1)}


def kalman_cv2(Z, Qn, Rn):
    Fm = torch.tensor([[1.0, 1.0], [0.0, 1.0]], dtype=Z.dtype)
    H = torch.tensor([[1.0, 0.0]], dtype=Z.dtype)
    x, P = Z.new_zeros(2, 1), torch.eye(2, dtype=Z.dtype)
    xs = []
    for t in range(6):
        x = Fm @ x
        P = Fm @ P @ Fm.T + Qn[0] * torch.eye(2, dtype=Z.dtype)
        S = H @ P @ H.T + Rn[0]
        K = P @ H.T / S
        x = x + K * (Z[t] - H @ x)
        P = (torch.eye(2, dtype=Z.dtype) - K @ H) @ P
        xs.append(x[:, 0])
    xs = torch.stack(xs)
    return {"Xp": xs[:, 0], "Xv": xs[:, 1]}


def lif_neuron(X, W):
    cur = X @ W.T
    v, s, spikes = None, None, []
    for t in range(8):
        v = cur[0] if t == 0 else 0.9 * v + cur[t] - s
        s = torch.sigmoid(5 * (v - 1))
        spikes.append(s)
    S = torch.stack(spikes)
    return {"S": S, "Rt": S.mean(0)}


def s4d_kernel_conv(A, Bv, Cv, X):
    k = (Cv * Bv * A[None, :] ** torch.arange(8, dtype=A.dtype)[:, None]).sum(1)
    y = F.conv1d(F.pad(X, (7, 0))[None, None], k.flip(0)[None, None])[0, 0]
    return {"Y": y}


def rnnt_loss(Lg, Lb):
    lp = torch.log_softmax(Lg, -1)
    T, U1 = 4, 3
    al = [[None] * U1 for _ in range(T)]
    for t in range(T):
        for u in range(U1):
            if t == 0 and u == 0:
                al[t][u] = Lg.new_zeros(())
                continue
            terms = []
            if t > 0:
                terms.append(al[t - 1][u] + lp[t - 1, u, 0])
            if u > 0:
                terms.append(al[t][u - 1] + lp[t, u - 1, int(Lb[u - 1])])
            al[t][u] = torch.logsumexp(torch.stack(terms), 0)
    return {"Loss": -(al[T - 1][U1 - 1] + lp[T - 1, U1 - 1, 0]).reshape(1)}


def poly1_ce(X, Tg):
    ce = F.cross_entropy(X, Tg, reduction="none")
    pt = torch.exp(-ce)  # the softmax probability of the target
    return {"L": (ce + 1.0 * (1 - pt)).mean().reshape(1)}


def generalized_dice(X, Lb):
    p = torch.softmax(X, 1)
    g = F.one_hot(Lb, 3).permute(0, 2, 1).to(X.dtype)
    gs = g.sum((0, 2))
    w = 1.0 / (gs + 1.0) ** 2
    inter = (p * g).sum((0, 2))
    denom = (p + g).sum((0, 2))
    return {"L": (1 - 2 * (w * inter).sum() / (w * denom).sum()).reshape(1)}


def kd_loss(S, Tl, Tg):
    T, alpha = 2.0, 0.7
    kl = F.kl_div(F.log_softmax(S / T, 1), F.log_softmax(Tl / T, 1), reduction="batchmean", log_target=True)
    return {"L": (alpha * T * T * kl + (1 - alpha) * F.cross_entropy(S, Tg)).reshape(1)}


def asymmetric_loss(X, Yt):
    # AsymmetricLoss.forward of github.com/Alibaba-MIIL/ASL (disable_torch_grad_focal_loss=False)
    gn, gp, clip, eps = 4, 1, 0.05, 1e-8
    y = Yt.to(X.dtype)
    xs_pos = torch.sigmoid(X)
    xs_neg = (1 - xs_pos + clip).clamp(max=1)
    loss = y * torch.log(xs_pos.clamp(min=eps)) + (1 - y) * torch.log(xs_neg.clamp(min=eps))
    pt = xs_pos * y + xs_neg * (1 - y)
    w = torch.pow(1 - pt, gp * y + gn * (1 - y))
    return {"L": -(loss * w).sum().reshape(1)}


def supcon_loss(Zf, Lb):
    z = F.normalize(Zf, dim=1)
    sim = z @ z.T / 0.5
    eye = torch.eye(6, dtype=torch.bool)
    logprob = sim - torch.log(torch.where(eye, torch.zeros_like(sim), sim.exp()).sum(1, keepdim=True))
    pos = ((Lb[:, None] == Lb[None, :]) & ~eye).to(Zf.dtype)
    per = -(pos * logprob).sum(1) / pos.sum(1).clamp(min=1)
    return {"L": per.mean().reshape(1)}


def barlow_twins(Z1, Z2):
    def bn(z):
        return F.batch_norm(z, None, None, training=True, eps=1e-5)
    c = bn(Z1).T @ bn(Z2) / 6
    on = ((1 - torch.diagonal(c)) ** 2).sum()
    off = (c ** 2).sum() - (torch.diagonal(c) ** 2).sum()
    return {"L": (on + 0.05 * off).reshape(1)}


def vicreg_loss(Z1, Z2):
    inv = F.mse_loss(Z1, Z2)
    std1, std2 = torch.sqrt(Z1.var(0) + 1e-4), torch.sqrt(Z2.var(0) + 1e-4)
    var = torch.relu(1 - std1).mean() / 2 + torch.relu(1 - std2).mean() / 2
    c1, c2 = torch.cov(Z1.T), torch.cov(Z2.T)
    off = ~torch.eye(3, dtype=torch.bool)
    cov = (c1[off] ** 2).sum() / 3 + (c2[off] ** 2).sum() / 3
    return {"L": (25 * inv + 25 * var + cov).reshape(1), "Terms": torch.stack([inv, var, cov])}


def resnet_block_gn(X, Temb, Wt, Bt, G1, B1, W1, Cb1, G2, B2, W2, Cb2):
    h = F.silu(F.group_norm(X[None], 2, G1, B1, eps=1e-6))
    h = F.conv2d(h, W1, Cb1, padding=1) + F.linear(F.silu(Temb), Wt, Bt)[None, :, None, None]
    h = F.conv2d(F.silu(F.group_norm(h, 2, G2, B2, eps=1e-6)), W2, Cb2, padding=1)
    return {"Y": (X[None] + h)[0]}


def conv2d_hwcn(X, W):
    y = F.conv2d(X.permute(3, 2, 0, 1), W.permute(3, 2, 0, 1))  # N, K, H', W'
    return {"Y": torch.relu(y).permute(2, 3, 1, 0)}


def fast_tanh_mlp(X, W1, B1, W2):
    return {"Y": torch.tanh(F.linear(X, W1, B1)) @ W2.T}


def wasserstein1d_sorted(Du, Dv):
    # scipy.stats.wasserstein_distance's CDF form (_cdf_distance with p = 1) on the samples
    u, v = torch.cumsum(Du, 0) - 1.5, torch.cumsum(Dv, 0) - 2.0
    allv = torch.sort(torch.cat([u, v])).values
    deltas = allv[1:] - allv[:-1]
    ucdf = torch.searchsorted(u.detach(), allv[:-1].detach(), right=True).to(u.dtype) / 4
    vcdf = torch.searchsorted(v.detach(), allv[:-1].detach(), right=True).to(v.dtype) / 6
    return {"W": (torch.abs(ucdf - vcdf) * deltas).sum().reshape(1)}


def ctc_batched(X, Lab, Ln):
    lp = torch.log_softmax(X, -1).transpose(0, 1)  # T, B, V
    return {"Loss": F.ctc_loss(lp, Lab, torch.tensor([6, 6]), Ln, blank=0, reduction="sum").reshape(1)}


def stft_conv1d_logpow(X):
    win = torch.hann_window(4, periodic=True, dtype=X.dtype)
    spec = torch.stft(X, 4, hop_length=2, window=win, center=True, pad_mode="reflect", return_complex=True)
    return {"Y": torch.log1p(spec.abs() ** 2)}


REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
