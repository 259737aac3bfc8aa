#!/usr/bin/python3
"""Acceptance round 3: writes inputs and NumPy reference outputs of lang_r3.tir into data/
(files r3_*.npy). Run with /usr/bin/python3 from this folder; the .npy files are checked in,
so the tests need no Python. Every reference is computed here, independently of tirc, from
the meaning of the script (LANGUAGE.md)."""
import os
import numpy as np

os.makedirs("data", exist_ok=True)
f32 = np.float32
rng = np.random.default_rng(20261125)


def save(name, a):
    np.save(os.path.join("data", "r3_" + name + ".npy"), a)


# ---- multi_init: init with five stores, every compound store (in reduce order) ----
A = rng.uniform(-1, 1, (4, 6)).astype(f32)
save("mi_A", A)
S = np.zeros(4, f32)
M = np.full(4, np.finfo(f32).min, f32)
N = np.full(4, np.finfo(f32).max, f32)
P = np.ones(4, f32)
D = np.full(4, 100, f32)
for k in range(6):
    S = (S + A[:, k]).astype(f32)
    M = np.maximum(M, A[:, k])
    N = np.minimum(N, A[:, k])
    P = (P * (A[:, k] + f32(1.5))).astype(f32)
    D = (D - A[:, k]).astype(f32)
for name, v in [("S", S), ("M", M), ("N", N), ("P", P), ("D", D)]:
    save("mi_" + name, v)

# ---- local (n = 3): block-local alloc, lets, if / else if / else, opaque block ----
n = 3
A = rng.uniform(-1, 1, (n, 8)).astype(f32)
save("lo_A", A)
x = (A * f32(2) - f32(0.25)).astype(f32)
T = np.where(x > 0, x, np.where(x > -0.5, f32(0), (-x * f32(3)).astype(f32))).astype(f32)
B = np.empty((n, 8), f32)
B[:, 1:] = T[:, 1:] + T[:, :-1]
B[:, 0] = T[:, 0]
save("lo_B", B)
C = np.zeros(n, f32)
for k in range(8):
    C = (C + B[:, k] * f32(k % 3 == 0)).astype(f32)
save("lo_C", C)

# ---- logic: float comparisons into bool, casts to bool, inf / nan, unsigned negation ----
A = np.array([0.0, -0.0, 0.7, np.nan, np.inf, -2.0], f32)
U = np.array([0, 1, 200, 255, 3, 128], np.uint8)
save("lg_A", A)
save("lg_U", U)
with np.errstate(invalid="ignore"):
    save("lg_G", A >= f32(0.5))
    save("lg_Z", A.astype(bool))
    save("lg_L", (~(A < 0) & (A != np.inf)) | (A != A))
    clip = np.maximum(np.minimum(A, f32(2.5e4)), f32(-2.5e4))
    sel = np.where(A != A, f32(-np.inf), clip).astype(f32)
    save("lg_F", (sel * f32(1e-3) + f32(0)).astype(f32))
save("lg_V", ((256 - U.astype(np.int32)) % 256 + 3).astype(np.uint8))

# ---- shifted (n = 3, m = 5): serial(1, n + 1), serial(2, m), symbolic grid ----
n, m = 3, 5
A = rng.uniform(-1, 1, (n, m)).astype(f32)
save("sh_A", A)
B = np.zeros((n, m), f32)
B[:, 2:] = (A[:, 2:] - (A[:, 1:-1] * A[:, :-2]).astype(f32)).astype(f32)
save("sh_B", B)
