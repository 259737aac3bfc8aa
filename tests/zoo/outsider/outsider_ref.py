#!/usr/bin/python3
"""PyTorch references of tests/zoo/outsider/outsider.tir, checked by the zoo's check.py.

    outsider_ref.py grad FUNC DIR    as examples/ops/ref/check.py grad, with these references

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


def inplace3(X, W):
    y = X * W
    y = y * y + X
    even = torch.arange(8) % 2 == 0
    return {"Y": torch.where(even, y * W[4:8].repeat_interleave(2), y)}


def out_mid(X):
    h = torch.tanh(X)
    return {"H": h, "Z": h * h.flip(0) + h}


def multi_out(X):
    return {"S": (X * X).sum(1), "N": (X > 0).sum(1).to(torch.int32),
            "C": torch.full((4,), 2.0, dtype=torch.float64)}


def where_sum(X):
    mask = torch.arange(6)[None, :] < (torch.arange(5)[:, None] + 2)
    return {"Y": (X * 3.0 * mask).sum(1)}


def max_dup(X):
    return {"M": torch.cat([X, X], 1).amax(1)}


def min_pool_pad(X):
    return {"Y": -F.max_pool1d(-X[None, None], 3, stride=1, padding=1)[0, 0]}


def gather_scatter(E, I, X):
    g = E[I] * X[:, None]
    o = torch.zeros(7, dtype=X.dtype).index_add(0, I, X * X)
    return {"G": g, "O": o}


def data_branch(X, A, B):
    return {"Y": torch.where(X > 0, X * X, torch.exp(X)), "Z": torch.where(A > B, A * X, B - X)}


def init_bias(X, B):
    return {"Y": B + (X * X).sum(1)}


def cast_weights(n, s, X):
    i = torch.arange(6, dtype=torch.float64)
    return {"Y": X * (i + n) + s * (torch.arange(6) % 2) * X * X}


def sym_colsum(n, X):
    return {"Y": (X * X).sum(0)}


def scan_cumsum(X):
    return {"Y": torch.cumsum(X, 1)}


def lin_rec(A, X, H0):
    h, out = H0[0], []
    for t in range(7):
        h = A[t] * h + X[t]
        out.append(h)
    return {"H": torch.stack(out)}


def rnn(W, U, X):
    h, out = torch.zeros(3, dtype=W.dtype), []
    for t in range(5):
        h = torch.tanh(W @ h + U * X[t])
        out.append(h)
    return {"H": torch.stack(out)}


def sym_diag(X):
    return {"Y": X * X.T + torch.diagonal(X)[:, None], "D": torch.diagonal(X) ** 2}


def conv_stride(X, W):
    return {"Y": F.conv1d(X[None, None], W[None, None])[0, 0], "Z": X[1:11:2] * X[2:12:2]}


def reshape_divmod(X):
    return {"Y": X.reshape(3, 8) * torch.arange(1, 9, dtype=X.dtype)}


def conv_t(X, W):
    return {"Y": F.conv_transpose1d(X[None, None], W[None, None], stride=2)[0, 0]}


def fused_rows(X, V):
    return {"Y": torch.sigmoid(X @ V)}


def quad_form(X, A):
    return {"Q": (X @ A @ X).reshape(1)}


def div_total(X):
    return {"Y": X / X.sum()}


def lse(X):
    return {"L": torch.logsumexp(X, 1)}


def clamp_pow(X):
    a = X.abs() + 0.5
    return {"Y": X.clamp(-1.0, 1.0) * a ** 1.5 + a.sqrt()}


def matmul_bt(A, B):
    return {"C": A @ B.T}


def mean_var(X):
    return {"Mu": X.mean(1), "Var": X.var(1, unbiased=False)}


def init_loop_rows(A):
    return {"C": (A * A).sum(2)}


def prod_rows(X):
    return {"P": X.prod(1)}


def max_pool_pad(X):
    return {"Y": F.max_pool2d(X[None, None], 2, stride=2, ceil_mode=True)[0, 0]}


def softmax_inplace(X):
    return {"Y": torch.softmax(X, 1)}


def shifted(X, I):
    return {"Y": X[I + 1] * X[0:8:2]}


def if_stmt(X):
    return {"Y": torch.where(X > 0, X * 3.0, X * X)}


def sub_mul_red(X):
    return {"A": 10.0 - X.sum(1), "B": 2.0 * X.prod(1)}


def opaque_iv(X):
    return {"Y": X * X}


def partial_where(X):
    y = X * X * X.flip(0)
    return {"Y": torch.cat([y[:5], X[5:]])}


def thread_bind(X):
    return {"Y": (torch.sin(X) * torch.cos(X)).sum(1)}


def i64_idx(X):
    return {"Y": X[0:6:2] + X.flip(0)[0:3]}


def two_out_same(X):
    return {"A": X * X, "B": X * X + X}


def scan_two_back(X):
    ys = [X[0], X[1]]
    for t in range(2, 8):
        ys.append(ys[t - 1] * 0.5 + ys[t - 2] * 0.25 + X[t])
    return {"Y": torch.stack(ys)}


def argmax_gather(X, V):
    a = X.argmax(1)
    return {"Y": X.gather(1, a[:, None])[:, 0] * V[a]}



def sym_init_loop(n, X):
    return {"C": torch.exp(X).sum(2)}

REFS = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_") and k[0].islower()
        and k not in ("check",)}

if __name__ == "__main__":
    check.REFS = REFS
    sys.exit(check.main(sys.argv))
