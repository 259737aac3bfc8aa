#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider17/outsider17.tir, checked by the zoo's check.py.

    outsider17_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

Each reference takes the function's parameters (torch tensors in float64 / int64) and returns a
dict output name -> tensor, written from the PyTorch / paper definitions (softmax attention for
the online softmax, torch.matrix_exp for the Taylor exponential and Rodrigues' rotation,
MultivariateNormal for the Cholesky NLL, cos(k acos t) for the Chebyshev recurrence, explicit
double sums for the Hawkes likelihood, F.conv1d / conv2d / pad, ...), not from the .tir.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ops", "ref"))
import check  # noqa: E402


def nerf_render(Sig, Dl, Col):
    sd = Sig * Dl
    tau = torch.cat([torch.zeros_like(sd[:, :1]), sd.cumsum(1)[:, :-1]], 1)
    w = torch.exp(-tau) * (1 - torch.exp(-sd))
    return {"Rgb": (w[:, :, None] * Col).sum(1), "Acc": w.sum(1)}


def nerf_posenc_mlp(X, W):
    fe = [X]
    for k in range(3):
        fe += [torch.sin(2.0 ** k * math.pi * X), torch.cos(2.0 ** k * math.pi * X)]
    return {"Y": torch.cat(fe, 1) @ W.T}


def hashgrid_encode(P, Tb):
    levels = []
    for lv in range(2):
        res = 2 + 2 * lv
        p = P * res
        f = torch.floor(p)
        x0, y0 = f[:, 0].long(), f[:, 1].long()
        wx, wy = (p - f)[:, 0:1], (p - f)[:, 1:2]

        def at(x, y):
            return Tb[lv][(x + 7 * y) % 16]
        levels.append((1 - wx) * (1 - wy) * at(x0, y0) + wx * (1 - wy) * at(x0 + 1, y0)
                      + (1 - wx) * wy * at(x0, y0 + 1) + wx * wy * at(x0 + 1, y0 + 1))
    return {"Y": torch.stack(levels, 1)}


def sh_eval(Dir, Coef):
    d = Dir / torch.sqrt((Dir * Dir).sum(1, keepdim=True) + 1e-8)
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    c0, c1 = 0.28209479177387814, 0.4886025119029199
    c2 = [1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396]
    basis = torch.stack([torch.full_like(x, c0), -c1 * y, c1 * z, -c1 * x, c2[0] * x * y, c2[1] * y * z,
                         c2[2] * (2 * z * z - x * x - y * y), c2[3] * x * z, c2[4] * (x * x - y * y)], 1)
    return {"Rgb": torch.relu(0.5 + torch.einsum("nk,nkc->nc", basis, Coef))}


def online_softmax_attn(Q, K, V):
    return {"O": torch.softmax(Q @ K.T * 0.5, 1) @ V}


def deltanet(Q, K, V, Beta):
    S = torch.zeros(3, 3, dtype=Q.dtype)
    outs = []
    for t in range(5):
        u = S @ K[t]
        S = S + Beta[t] * torch.outer(V[t] - u, K[t])
        outs.append(S @ Q[t])
    return {"O": torch.stack(outs)}


def slstm_cell(X, Wx, Rh, Bb):
    h = m = c = n = torch.zeros(2, dtype=X.dtype)
    hs = []
    for t in range(5):
        pre = X[t] * Wx + h * Rh + Bb
        ip, fp, zp, op = pre[0], pre[1], pre[2], pre[3]
        lf = F.logsigmoid(fp)
        mn = torch.maximum(lf + m, ip)
        ig, fg = torch.exp(ip - mn), torch.exp(lf + m - mn)
        c = fg * c + ig * torch.tanh(zp)
        n = fg * n + ig
        m = mn
        h = torch.sigmoid(op) * c / n
        hs.append(h)
    return {"H": torch.stack(hs)}


def min_gru(X, Wz, Wh):
    z, hc = torch.sigmoid(X @ Wz.T), X @ Wh.T
    h, hs = torch.zeros(3, dtype=X.dtype), []
    for t in range(6):
        h = (1 - z[t]) * h + z[t] * hc[t]
        hs.append(h)
    return {"H": torch.stack(hs)}


def heat1d_steps(U0, Kp):
    u, us = U0, [U0]
    for _ in range(4):
        up = F.pad(u, (1, 1))
        u = u + Kp[0] * (up[:-2] - 2 * u + up[2:])
        us.append(u)
    return {"U": torch.stack(us)}


def verlet_spring(X0, V0, Ks):
    x, v, xs = X0 + torch.arange(4, dtype=X0.dtype), V0, []
    xs.append(x)
    zero = torch.zeros(1, dtype=X0.dtype)
    for _ in range(5):
        fsp = Ks * (x[1:] - x[:-1] - 1)
        v = v + 0.1 * (torch.cat([fsp, zero]) - torch.cat([zero, fsp]))
        x = x + 0.1 * v
        xs.append(x)
    return {"Xs": torch.stack(xs)}


def hawkes_nll(Dt, Mu, Al, Be):
    t = torch.cat([torch.zeros(1, dtype=Dt.dtype), Dt[1:].cumsum(0)])
    T = t[-1]
    lam = [Mu[0] + Al[0] * Be[0] * sum((torch.exp(-Be[0] * (t[i] - t[j])) for j in range(i)),
                                      torch.zeros((), dtype=Dt.dtype)) for i in range(6)]
    comp = Mu[0] * T + Al[0] * (1 - torch.exp(-Be[0] * (T - t))).sum()
    return {"L": (comp - torch.log(torch.stack(lam)).sum()).reshape(1)}


def planar_flow(Z, U, W, B):
    th = torch.tanh(Z @ W + B)
    return {"Zo": Z + U[None] * th[:, None], "Ld": torch.log(torch.abs(1 + (U @ W) * (1 - th * th)))}


def affine_coupling(X, W1, B1, Ws, Wt):
    x1, x2 = X[:, :2], X[:, 2:]
    h = torch.tanh(x1 @ W1.T + B1)
    s, t = torch.tanh(h @ Ws.T), h @ Wt.T
    return {"Y": torch.cat([x1, x2 * torch.exp(s) + t], 1), "Ld": s.sum(1)}


def vae_kl_reparam(Mu, Lv, Eps, Wd, Tg):
    z = Mu + torch.exp(0.5 * Lv) * Eps
    kl = (-0.5 * (1 + Lv - Mu * Mu - torch.exp(Lv)).sum(1)).mean()
    return {"L": (F.mse_loss(z @ Wd.T, Tg) + 0.5 * kl).reshape(1)}


def black_scholes(S, K, Tt, Sg, R):
    nd = torch.distributions.Normal(torch.tensor(0.0, dtype=S.dtype), torch.tensor(1.0, dtype=S.dtype))
    sq = Sg * torch.sqrt(Tt)
    d1 = (torch.log(S / K) + (R[0] + Sg * Sg / 2) * Tt) / sq
    return {"C": S * nd.cdf(d1) - K * torch.exp(-R[0] * Tt) * nd.cdf(d1 - sq)}


def neural_sort(S):
    n, tau = 5, 0.5
    A = (S[:, :, None] - S[:, None, :]).abs()
    B = A.sum(2)
    scaling = (n + 1 - 2 * (torch.arange(n, dtype=S.dtype) + 1))
    P = torch.softmax((scaling[None, :, None] * S[:, None, :] - B[:, None, :]) / tau, -1)
    return {"P": P, "Srt": (P @ S[:, :, None])[:, :, 0]}


def mmd_rbf(X, Y):
    def k(a, b):
        return torch.exp(-0.5 * ((a[:, None] - b[None]) ** 2).sum(-1))
    return {"L": (k(X, X).mean() + k(Y, Y).mean() - 2 * k(X, Y).mean()).reshape(1)}


def ccc_loss(P, T):
    mp, mt = P.mean(), T.mean()
    vp, vt = ((P - mp) ** 2).mean(), ((T - mt) ** 2).mean()
    cv = ((P - mp) * (T - mt)).mean()
    ccc = 2 * cv / (vp + vt + (mp - mt) ** 2)
    return {"L": torch.stack([1 - ccc, 1 - cv / torch.sqrt(vp * vt)])}


def tversky_loss(Lg, Tg):
    p = torch.softmax(Lg, 1)
    oh = F.one_hot(Tg, 3).permute(0, 2, 1).to(Lg.dtype)
    tp, fp, fn = (p * oh).sum((0, 2)), (p * (1 - oh)).sum((0, 2)), ((1 - p) * oh).sum((0, 2))
    ti = (tp + 1) / (tp + 0.3 * fp + 0.7 * fn + 1)
    return {"L": ((1 - ti) ** 0.75).mean().reshape(1)}


def wing_loss(P, T):
    x = (P - T).abs()
    return {"L": torch.where(x < 1, torch.log1p(x / 2), x - (1 - math.log(1.5))).mean().reshape(1)}


def arcface_loss(X, W, Lbl):
    m = 0.3
    cos = F.normalize(X, dim=1, eps=0) @ F.normalize(W, dim=1, eps=0).T
    phi = torch.where(cos > math.cos(math.pi - m), torch.cos(torch.acos(cos) + m), cos - math.sin(math.pi - m) * m)
    logits = 4.0 * torch.where(F.one_hot(Lbl, 3).bool(), phi, cos)
    return {"L": F.cross_entropy(logits, Lbl).reshape(1)}


def diou_loss(Pc, Ps, Tc, Ts):
    p1, p2, t1, t2 = Pc - Ps / 2, Pc + Ps / 2, Tc - Ts / 2, Tc + Ts / 2
    inter = (torch.minimum(p2, t2) - torch.maximum(p1, t1)).clamp(min=0).prod(1)
    iou = inter / (Ps.prod(1) + Ts.prod(1) - inter)
    c2 = ((torch.maximum(p2, t2) - torch.minimum(p1, t1)) ** 2).sum(1)
    rho = ((Pc - Tc) ** 2).sum(1)
    return {"L": (1 - iou + rho / c2).mean().reshape(1)}


def film_layer(X, Zc, Wg, Wb):
    g, b = 1 + Zc @ Wg.T, Zc @ Wb.T
    return {"Y": torch.relu(g[:, :, None] * X + b[:, :, None])}


def eca_block(X, W):
    a = torch.sigmoid(F.conv1d(X.mean((1, 2))[None, None], W[None, None], padding=1)[0, 0])
    return {"Y": X * a[:, None, None]}


def modulated_conv(X, W, St):
    w = W[None] * St[:, None, :, None]
    w = w * torch.rsqrt((w * w).sum((2, 3)) + 1e-8)[:, :, None, None]
    return {"Y": torch.stack([F.conv1d(X[n:n + 1], w[n], padding=1)[0] for n in range(2)])}


def condconv(X, We, Wr):
    r = torch.sigmoid(X.mean(2) @ Wr.T)
    wn = torch.einsum("ne,eoik->noik", r, We)
    return {"Y": torch.stack([F.conv1d(X[n:n + 1], wn[n], padding=1)[0] for n in range(2)])}


def involution1d(X, Wk):
    kn = Wk @ X
    xu = F.pad(X, (1, 1)).unfold(1, 3, 1)
    return {"Y": (xu * kn.T[None]).sum(-1)}


def lightweight_conv(X, W):
    w = torch.softmax(W, -1).repeat_interleave(2, 0)[:, None, :]
    return {"Y": F.conv1d(F.pad(X, (2, 0))[None], w, groups=4)[0]}


def toeplitz_conv1d(X, W):
    return {"Y": F.conv1d(X[:, None], W.flip(0)[None, None], padding=2)[:, 0]}


def harris_response(I):
    ix = (I[1:6, 2:7] - I[1:6, 0:5]) * 0.5
    iy = (I[2:7, 1:6] - I[0:5, 1:6]) * 0.5

    def box(t):
        return F.conv2d(t[None, None], torch.ones(1, 1, 3, 3, dtype=I.dtype))[0, 0]
    sxx, syy, sxy = box(ix * ix), box(iy * iy), box(ix * iy)
    return {"R": sxx * syy - sxy * sxy - 0.05 * (sxx + syy) ** 2}


def bilateral1d(X, Sr):
    win = F.pad(X[None, None], (2, 2), mode="replicate")[0, 0].unfold(0, 5, 1)
    k = torch.arange(5, dtype=X.dtype) - 2
    w = torch.exp(-k * k / 2 - (win - X[:, None]) ** 2 / (2 * Sr[0] * Sr[0]))
    return {"Y": (w * win).sum(1) / w.sum(1)}


def _t5_bucket(rp, num_buckets=8, max_distance=10):
    # transformers' T5Attention._relative_position_bucket, bidirectional
    num_buckets //= 2
    ret = (rp > 0).to(torch.long) * num_buckets
    n = rp.abs()
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return ret + torch.where(n < max_exact, n, large)


def t5_relbias(Q, K, V, Tb):
    pos = torch.arange(6)
    bias = Tb[_t5_bucket(pos[None, :] - pos[:, None])]
    return {"O": torch.softmax(Q @ K.T * 0.5 + bias, 1) @ V}


def expm_taylor(A):
    return {"Y": torch.matrix_exp(A)}


def mvn_nll_chol(X, Mu, Lr):
    L = torch.tril(Lr, -1) + torch.diag(torch.exp(torch.diagonal(Lr)))
    return {"Nll": -torch.distributions.MultivariateNormal(Mu, scale_tril=L).log_prob(X)}


def style_loss(Fa, Fb):
    return {"L": ((Fa @ Fa.T / 24 - Fb @ Fb.T / 24) ** 2).sum().reshape(1)}


def drop_path_ls(X, Wf, Gm, Mk):
    return {"Y": X + Mk.to(X.dtype)[:, None, None] / 0.8 * Gm * F.gelu(X @ Wf.T, approximate="tanh")}


def rodrigues_rotate(Rv, Pt):
    ys = []
    for n in range(3):
        x, y, z = Rv[n]
        o = torch.zeros((), dtype=Rv.dtype)
        Kx = torch.stack([torch.stack([o, -z, y]), torch.stack([z, o, -x]), torch.stack([-y, x, o])])
        ys.append(Pt[n] @ torch.matrix_exp(Kx).T)
    return {"Y": torch.stack(ys)}


def project_points(Pxy, Pz, Kf, Dk):
    x = Pxy / Pz[:, None]
    r2 = (x * x).sum(1, keepdim=True)
    return {"Uv": Kf[:2] * x * (1 + Dk[0] * r2 + Dk[1] * r2 * r2) + Kf[2:]}


def soft_histogram(X):
    lo = torch.arange(5, dtype=X.dtype) * 0.2
    h = (torch.sigmoid((X[None] - lo[:, None]) * 20) - torch.sigmoid((X[None] - lo[:, None] - 0.2) * 20)).sum(1)
    return {"Hn": h / h.sum()}


def poincare_dist(U, V):
    nu, nv, duv = (U * U).sum(1), (V * V).sum(1), ((U - V) ** 2).sum(1)
    return {"D": torch.acosh(1 + 2 * duv / ((1 - nu) * (1 - nv)))}


def cheby_kan(X, C):
    k = torch.arange(4, dtype=X.dtype)
    T = torch.cos(k * torch.acos(torch.tanh(X))[..., None])
    return {"Y": torch.einsum("nik,oik->no", T, C)}


def hier_softmax(Hd, Nv, Wd, Pn, Cd):
    dt = (Hd[:, None, :] * Nv[Pn[Wd]]).sum(-1)
    return {"L": -F.logsigmoid((1 - 2 * Cd[Wd].to(Hd.dtype)) * dt).sum().reshape(1)}


def gaussian_blur_sep(X, Kw):
    h = F.conv2d(F.pad(X[None, None], (1, 1, 0, 0), mode="reflect"), Kw.view(1, 1, 1, 3))
    return {"Y": F.conv2d(F.pad(h, (0, 0, 1, 1), mode="reflect"), Kw.view(1, 1, 3, 1))[0, 0]}


def ntm_rw(X, M0):
    m, rs = M0, []
    for t in range(5):
        w = torch.softmax(m @ X[t], 0)
        m = m + 0.5 * w[:, None] * (X[t][None] - m)
        rs.append(w @ m)
    return {"R": torch.stack(rs)}


sched_modulated_conv = modulated_conv
sched_nerf_render = nerf_render
sched_t5_relbias = t5_relbias
sched_involution1d = involution1d
sched_deltanet = deltanet

REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
