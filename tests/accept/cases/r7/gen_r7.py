# Inputs and NumPy / PyTorch references of the outsider round 7 tests
# (tests/accept/outsider_r7_test.cpp), written as a user would: run with /usr/bin/python3 from
# this folder.
import numpy as np
import torch


def save_bf16(path, t):
    """bf16 as tirc reads and writes it: the raw bits with descr '<u2'."""
    np.save(path, t.view(torch.int16).numpy().view(np.uint16))


# ---- nan_reduce.tir
X = np.random.RandomState(0).randn(4, 64).astype(np.float32)
X[0, 5] = np.nan
X[1, 63] = np.inf
X[2, 0] = -np.inf
X[3, 10] = np.nan
X[3, 11] = np.inf
np.save('nan_X.npy', X)
with np.errstate(all='ignore'):
    np.save('nan_M.npy', np.max(X, axis=1))
    np.save('nan_N.npy', np.min(X, axis=1))
    np.save('nan_S.npy', X.astype(np.float64).sum(axis=1).astype(np.float32))
    np.save('nan_P.npy', np.where(X > 0, X, np.float32(0) * X))
    np.save('nan_Q.npy', np.where(X != X, np.float32(-1), np.maximum(X, np.float32(-np.inf))))

# ---- half_accumulate.tir: a Python loop, one rounding per step
r = np.random.RandomState(1)
H = (r.rand(4, 1000) * 4).astype(np.float16)
B = torch.tensor(r.rand(4, 1000) * 2, dtype=torch.bfloat16)
np.save('half_X.npy', H)
save_bf16('half_Y.npy', B)
S = np.zeros(4, np.float16)
for k in range(1000):
    S = (S + H[:, k] * np.float16(0.1)).astype(np.float16)
np.save('half_S.npy', S)
T = torch.zeros(4, dtype=torch.bfloat16)
for k in range(1000):
    T = T + B[:, k] * B[:, k]
save_bf16('half_T.npy', T)
np.save('half_U.npy', H * H / np.float16(3) + np.float16(1e-4))
