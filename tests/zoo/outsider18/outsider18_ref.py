#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider18/outsider18.tir, checked by the zoo's check.py.

    outsider18_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64) and returns a
dict output name -> tensor, written from the PyTorch / TVM definitions (F.fractional_max_pool2d,
F.conv2d for Winograd, NCHWc and space-to-batch convolutions, F.affine_grid + F.grid_sample,
nn.LSTM with proj_size, nn.TransformerEncoderLayer, F.multilabel_margin_loss,
F.triplet_margin_loss(swap=True), torch.linalg.inv, ... or explicit loops after the TVM topi /
torchvision / torchaudio sources where torch has no such operator), not from the .tir.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402

try:  # torch >= 2.0
    from torch.func import functional_call as _functional_call
except ImportError:
    from torch.nn.utils.stateless import functional_call as _functional_call


def fractional_max_pool2d(X, U):
    # the samples only pick the windows (piecewise constant): torch refuses to differentiate them
    return {"Y": F.fractional_max_pool2d(X[None], 2, output_size=3, _random_samples=U.detach()[None])[0]}


def winograd_conv2d(X, W):
    return {"Y": F.conv2d(X[None], W)[0]}


def _reverse_sequence(X, L):
    rows = []
    for b in range(X.shape[0]):
        n = int(L[b])
        rows.append(torch.cat([X[b, :n].flip(0), X[b, n:]]))
    return torch.stack(rows)


def reverse_seq_rnn(X, L, Wx, Wh):
    xr = _reverse_sequence(X, L)
    h, hs = torch.zeros(2, 3, dtype=X.dtype), []
    for t in range(5):
        h = torch.tanh(xr[:, t] @ Wx.T + h @ Wh.T)
        hs.append(h)
    return {"H": _reverse_sequence(torch.stack(hs, 1), L)}


def seqmask_pool(X, L):
    valid = (torch.arange(5)[None, :] < L[:, None])[..., None]
    xm = torch.where(valid, X, torch.full_like(X, -10000.0))
    mean = (X * valid).sum(1) / L[:, None].to(X.dtype)
    return {"Y": torch.cat([xm.amax(1), mean], 1)}


def morph_gradient(X, K):
    p = X.unfold(1, 3, 2).unfold(2, 3, 2)  # c, y, x, r, s
    k = K[:, None, None]
    return {"G": (p + k).amax((-2, -1)) - (p - k).amin((-2, -1))}


def roi_pool(X, R):
    out = torch.zeros(2, 2, 2, 2, dtype=X.dtype)
    for n in range(2):
        x1, y1, x2, y2 = (int(torch.round(R[n, i])) for i in range(4))
        bh, bw = max(y2 - y1 + 1, 1) / 2.0, max(x2 - x1 + 1, 1) / 2.0
        for ph in range(2):
            for pw in range(2):
                hs = min(max(math.floor(ph * bh) + y1, 0), 6)
                he = min(max(math.ceil((ph + 1) * bh) + y1, 0), 6)
                ws = min(max(math.floor(pw * bw) + x1, 0), 6)
                we = min(max(math.ceil((pw + 1) * bw) + x1, 0), 6)
                if he > hs and we > ws:
                    out[n, :, ph, pw] = X[:, hs:he, ws:we].amax((1, 2))
    return {"Y": out}


def crop_and_resize(Img, B):
    ys = []
    for n in range(2):
        y1, x1, y2, x2 = B[n]
        iy = y1 * 4 + torch.arange(3, dtype=B.dtype) * (y2 - y1) * 4 / 2
        ix = x1 * 5 + torch.arange(3, dtype=B.dtype) * (x2 - x1) * 5 / 2
        t, b = torch.floor(iy).long(), torch.ceil(iy).long()
        l, r = torch.floor(ix).long(), torch.ceil(ix).long()
        ly, lx = (iy - torch.floor(iy))[:, None], (ix - torch.floor(ix))[None, :]
        tl, tr = Img[:, t][:, :, l], Img[:, t][:, :, r]
        bl, br = Img[:, b][:, :, l], Img[:, b][:, :, r]
        top, bot = tl + (tr - tl) * lx, bl + (br - bl) * lx
        ys.append(top + (bot - top) * ly)
    return {"Y": torch.stack(ys)}


def atrous_s2b(X, W):
    return {"Y": F.conv2d(X[None], W, padding=2, dilation=2)[0]}


def conv2d_nchwc(X, W, Bs):
    return {"Y": torch.relu(F.conv2d(X, W, Bs))}


def adaptive_avg_pool3d(X):
    return {"Y": F.adaptive_avg_pool3d(X, (3, 2, 3))}


def multilabel_margin(X, Yt):
    return {"L": F.multilabel_margin_loss(X, Yt.long(), reduction="none")}


def snn_alpha_dropout(X, W, Bs, M):
    p, ap = 0.2, -1.7580993408473766
    a = ((1 - p) * (1 + p * ap ** 2)) ** -0.5
    m = M.to(X.dtype)
    return {"Y": a * (F.selu(F.linear(X, W, Bs)) * m + ap * (1 - m)) - a * ap * p}


def affine_grid_sample(X, Th):
    g = F.affine_grid(Th[None], (1, 2, 4, 4), align_corners=False)
    return {"Y": F.grid_sample(X[None], g, mode="bilinear", padding_mode="zeros", align_corners=False)[0]}


def scatter_update(Z, U, I, W):
    # in loop order, so that the later of duplicate indices wins and autograd sees the overwrites
    s = Z.clone()
    for i in range(4):
        for c in range(3):
            s[int(I[i, c]), c] = U[i, c]
    return {"Y": s @ W}


def _bilinear_zero(img, y, x):
    # torchvision's deform_conv2d bilinear_interpolate on one channel image (H, W)
    H, Wd = img.shape
    if y <= -1 or y >= H or x <= -1 or x >= Wd:
        return img.new_zeros(())
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0

    def at(i, j):
        return img[i, j] if 0 <= i < H and 0 <= j < Wd else img.new_zeros(())
    return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) \
        + ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1)


def deform_conv2d(X, Off, Msk, W):
    cols = []
    for c in range(2):
        for r in range(3):
            for s in range(3):
                for h in range(3):
                    for w in range(3):
                        k = r * 3 + s
                        cols.append(_bilinear_zero(X[c], h + r + Off[2 * k, h, w], w + s + Off[2 * k + 1, h, w])
                                    * Msk[k, h, w])
    col = torch.stack(cols).reshape(2, 3, 3, 3, 3)
    return {"Y": torch.einsum("kcrs,crshw->khw", W, col)}


def log_mel_db(S, Fb):
    n = torch.arange(4, dtype=S.dtype)
    win = 0.5 - 0.5 * torch.cos(2 * math.pi * n / 4)  # torch.hann_window(4, periodic=True)
    frames = S.unfold(0, 4, 2) * win  # t, n
    spec = torch.fft.rfft(frames, dim=1)  # t, k (3 bins)
    power = spec.real ** 2 + spec.imag ** 2
    mel = Fb @ power.T  # m, t
    db = 10 * torch.log10(torch.clamp(mel, min=1e-10))
    return {"Db": torch.maximum(db, db.amax() - 20.0)}


def _compute_deltas(c):
    # torchaudio.functional.compute_deltas(win_length=5, mode="replicate")
    p = F.pad(c[None], (2, 2), mode="replicate")[0]
    k = torch.arange(-2, 3, dtype=c.dtype)
    return F.conv1d(p[:, None], k.view(1, 1, 5))[:, 0] / 10.0


def mfcc_deltas(C):
    d1 = _compute_deltas(C)
    return {"Y": torch.cat([C, d1, _compute_deltas(d1)], 0)}


def lstm_proj(X, Wih, Whh, Bih, Bhh, Whr):
    # nn.LSTM(2, 3, proj_size=2)'s equations (torch 1.13's stateless call does not reach the LSTM's
    # flattened weights): gates i, f, g, o; h_t = W_hr (o * tanh(c_t)).
    h, c, hs = torch.zeros(2, dtype=X.dtype), torch.zeros(3, dtype=X.dtype), []
    for t in range(4):
        g = Wih @ X[t] + Bih + Whh @ h + Bhh
        i, f, gg, o = torch.sigmoid(g[0:3]), torch.sigmoid(g[3:6]), torch.tanh(g[6:9]), torch.sigmoid(g[9:12])
        c = f * c + i * gg
        h = Whr @ (o * torch.tanh(c))
        hs.append(h)
    return {"H": torch.stack(hs), "Cn": c}


def encoder_layer(X, Win, Bin, Wo, Bo, G1, Be1, W1, B1, W2, B2, G2, Be2):
    m = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="relu", batch_first=True).double()
    params = {"self_attn.in_proj_weight": Win, "self_attn.in_proj_bias": Bin, "self_attn.out_proj.weight": Wo,
              "self_attn.out_proj.bias": Bo, "norm1.weight": G1, "norm1.bias": Be1, "linear1.weight": W1,
              "linear1.bias": B1, "linear2.weight": W2, "linear2.bias": B2, "norm2.weight": G2, "norm2.bias": Be2}
    m.train()  # the training path (no fused fast path); dropout is 0
    return {"Y": _functional_call(m, params, (X[None],))[0]}


def bsr_dense(X, Wd, Ix, Cnt):
    w = torch.zeros(4, 6, dtype=X.dtype)
    ptr = [0, int(Cnt[0]), int(Cnt[0]) + int(Cnt[1])]
    for r in range(2):
        for b in range(ptr[r], ptr[r + 1]):
            c = int(Ix[b])
            w = w.index_put((torch.arange(2 * r, 2 * r + 2)[:, None], torch.arange(2 * c, 2 * c + 2)[None, :]),
                            Wd[b], accumulate=True)
    return {"Y": X @ w.T}


def maxpool_grad(X, Dy):
    with torch.enable_grad():
        x = X if X.requires_grad else X.detach().requires_grad_(True)
        y = F.max_pool2d(x[None], 3, 2)[0]
        (dx,) = torch.autograd.grad(y, x, Dy, create_graph=True)
    return {"Dx": dx}


def rrelu_softmin(X, W, Nz):
    r = X @ W.T
    return {"Y": F.softmin(torch.where(r >= 0, r, Nz * r), dim=1)}


def embedding_renorm(Ix, E, W):
    rows = E[Ix]
    nr = rows.norm(dim=1, keepdim=True)
    return {"Y": (rows * torch.where(nr > 1.0, 1.0 / (nr + 1e-7), torch.ones_like(nr))) @ W.T}


def triplet_swap(A, P, N):
    return {"L": F.triplet_margin_loss(A, P, N, margin=1.0, p=2, swap=True).reshape(1)}


def swin_window_attn(X, Wq, Wk, Wv, Bt):
    # Swin Transformer's WindowAttention + shifted-window mask (window 2, shift 1, one head)
    ws, shift, H = 2, 1, 4
    xs = torch.roll(X, shifts=(-shift, -shift), dims=(0, 1))
    img = torch.zeros(H, H)
    cnt = 0
    for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
        for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            img[hs, wsl] = cnt
            cnt += 1

    def part(t):  # (H, W, C) -> (windows, ws * ws, C)
        return t.reshape(H // ws, ws, H // ws, ws, -1).permute(0, 2, 1, 3, 4).reshape(-1, ws * ws, t.shape[-1])
    mw = part(img[..., None])[..., 0]
    mask = torch.where(mw[:, :, None] == mw[:, None, :], 0.0, -100.0).to(X.dtype)
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + ws - 1
    idx = rel[..., 0] * (2 * ws - 1) + rel[..., 1]
    xw = part(xs)
    q, k, v = xw @ Wq.T, xw @ Wk.T, xw @ Wv.T
    att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(2) + Bt[idx][None] + mask, -1)
    o = (att @ v).reshape(H // ws, H // ws, ws, ws, -1).permute(0, 2, 1, 3, 4).reshape(H, H, -1)
    return {"Y": torch.roll(o, shifts=(shift, shift), dims=(0, 1))}


def mlp_mixer(X, Wt1, Wt2, Wc1, Wc2):
    u = X + (Wt2 @ F.gelu(Wt1 @ F.layer_norm(X, (3,))))
    return {"Y": u + F.gelu(F.layer_norm(u, (3,)) @ Wc1.T) @ Wc2.T}


def convnext_block(X, Wd, Bd, G, Be, W1, B1, W2, B2, Gm):
    d = F.conv2d(X[None], Wd[:, None], Bd, padding=1, groups=3)[0].permute(1, 2, 0)
    h = F.linear(F.gelu(F.linear(F.layer_norm(d, (3,), G, Be, eps=1e-6), W1, B1)), W2, B2)
    return {"Y": X + (Gm * h).permute(2, 0, 1)}


def inverted_residual(X, We, S1, T1, Wd, S2, T2, Wp, S3, T3):
    def bn(t, s, b):
        return t * s[:, None, None] + b[:, None, None]
    e = F.relu6(bn(F.conv2d(X[None], We[:, :, None, None])[0], S1, T1))
    d = F.relu6(bn(F.conv2d(e[None], Wd[:, None], padding=1, groups=6)[0], S2, T2))
    return {"Y": X + bn(F.conv2d(d[None], Wp[:, :, None, None])[0], S3, T3)}


def vit_patch_embed(Img, Wp, Bp, Cls, Pos, G, Bg):
    p = F.conv2d(Img[None], Wp, Bp, stride=2)[0].flatten(1).T  # 4 patches x 4 dims
    t = torch.cat([Cls[None], p]) + Pos
    return {"Y": F.layer_norm(t, (4,), G, Bg, eps=1e-6)}


def pointnet(P, W1, B1, W2, B2, Wf, Bf):
    h = torch.relu(F.linear(torch.relu(F.linear(P, W1, B1)), W2, B2))
    return {"Y": F.linear(h.amax(0), Wf, Bf)}


def edgeconv(X, Nb, Th, Ph):
    xi = X[:, None, :].expand(5, 3, 3)
    e = torch.relu((X[Nb] - xi) @ Th.T + xi @ Ph.T)
    return {"Y": e.amax(1)}


def adaln_zero(X, Cc, Wm, Bm, W1, B1, W2, B2):
    shift, scale, gate = F.linear(F.silu(Cc), Wm, Bm).chunk(3)
    h = F.layer_norm(X, (3,), eps=1e-6) * (1 + scale) + shift
    return {"Y": X + gate * F.linear(F.gelu(F.linear(h, W1, B1), approximate="tanh"), W2, B2)}


def convlstm_cell(X, H0, C0, W, B):
    g = F.conv2d(torch.cat([X, H0])[None], W, B, padding=1)[0]
    i, f, o, gg = torch.sigmoid(g[0:2]), torch.sigmoid(g[2:4]), torch.sigmoid(g[4:6]), torch.tanh(g[6:8])
    c = f * C0 + i * gg
    return {"H1": o * torch.tanh(c), "C1": c}


def timestep_embed(Tt, W1, B1, W2, B2):
    # diffusers' get_timestep_embedding(t, 4, flip_sin_to_cos=True, downscale_freq_shift=0)
    half = 2
    fr = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=Tt.dtype) / half)
    arg = Tt[:, None] * fr[None]
    emb = torch.cat([torch.cos(arg), torch.sin(arg)], 1)
    return {"Y": F.linear(F.silu(F.linear(emb, W1, B1)), W2, B2)}


def kv_cache_attn(p, Q, Kn, Vn, K0, V0):
    p = int(p)
    kc, vc = K0.clone(), V0.clone()
    kc[p], vc[p] = Kn, Vn
    att = torch.softmax(kc[:p + 1] @ Q / math.sqrt(4), 0)
    return {"O": att @ vc[:p + 1], "Kc": kc, "Vc": vc}


def gauss_jordan_inv(A):
    return {"Inv": torch.linalg.inv(A + 3 * torch.eye(3, dtype=A.dtype))}


def gaussian_splat2d(Mu, Cd, Cb, Op, Col):
    ys, xs = torch.meshgrid(torch.arange(4, dtype=Mu.dtype), torch.arange(4, dtype=Mu.dtype), indexing="ij")
    img = torch.zeros(4, 4, 3, dtype=Mu.dtype)
    T = torch.ones(4, 4, dtype=Mu.dtype)
    for g in range(4):
        dx, dy = xs - Mu[g, 0], ys - Mu[g, 1]
        q = Cd[g, 0] * dx * dx + Cd[g, 1] * dy * dy
        a = torch.clamp(Op[g] * torch.exp(-0.5 * q - Cb[g] * dx * dy), max=0.99)
        img = img + (T * a)[..., None] * Col[g]
        T = T * (1 - a)
    return {"Img": img}


def interp_bucketize(D, Fp, Xq):
    xp = torch.cat([D.new_zeros(1), torch.cumsum(D, 0)])
    b = torch.bucketize(Xq, xp[1:], right=True)
    return {"Y": Fp[b] + (Fp[b + 1] - Fp[b]) * (Xq - xp[b]) / (xp[b + 1] - xp[b])}


def istft_ola(Fr, Wn):
    # torch.istft's overlap-add and window-envelope normalisation, via F.fold
    num = F.fold((Fr * Wn).T[None], (1, 12), (1, 4), stride=(1, 2))[0, 0, 0]
    env = F.fold((Wn * Wn)[:, None].expand(4, 5)[None], (1, 12), (1, 4), stride=(1, 2))[0, 0, 0]
    return {"Y": num / env}


def tied_lm_head(Ix, Tg, E, G, B):
    h = F.layer_norm(E[Ix], (3,), G, B)
    return {"L": F.cross_entropy(h @ E.T, Tg).reshape(1)}


sched_winograd_conv2d = winograd_conv2d
sched_encoder_layer = encoder_layer
sched_swin_window_attn = swin_window_attn

REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
