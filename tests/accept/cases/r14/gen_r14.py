# Inputs and NumPy references for outsider_r14_test.cpp (run with /usr/bin/python3 from this
# directory). bf16 is stored as raw bits ('<u2', docs/interp.md).
import numpy as np

def bf16(x):  # round-to-nearest-even f32 -> bf16 bits
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)

def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)

ins = {
    'A': np.array([1.5, -0.1, 65504], np.float16),
    'B': bf16([1.5, -0.1, 3e38]),
    'C': np.array([True, False, True]),
    'D': np.array([0, 255, 7], np.uint8),
    'E': np.array([-128, 0, 127], np.int8),
    'F': np.array([0, 65535, 40000], np.uint16),
    'G': np.array([0, 4294967295, 3000000000], np.uint32),
    'H': np.array([2**62, -5, 7], np.int64),
    'I': np.array([1.0, -1.0, 1e-310]),
    'J': np.array([-7, 7, -32768], np.int16),
}
for k, v in ins.items():
    np.save('in_%s.npy' % k, v)
with np.errstate(over='ignore'):
    out = {
        'OA': ins['A'] * np.float16(2),
        'OB': bf16(from_bf16(ins['B']) * np.float32(2)),
        'OC': ~ins['C'],
        'OD': ins['D'] + np.uint8(1),
        'OE': ins['E'] - np.int8(1),
        'OF': ins['F'] * np.uint16(2),
        'OG': ins['G'] - np.uint32(1),
        'OH': ins['H'] * np.int64(3),
        'OI': ins['I'] / 3.0,
        'OJ': ins['J'] // np.int16(2),
    }
for k, v in out.items():
    np.save('ref_%s.npy' % k, v)

# kitchen.tir at n = 2 on a fixed A in [-2, 2]: the script's semantics written out in f32.
rng = np.random.default_rng(14)
A = rng.uniform(-2, 2, (8, 8)).astype(np.float32)
np.save('ks_A.npy', A)
n = 2
m = n * 2
B = np.zeros((8, 8), np.float32)
C = np.zeros(8, np.float32)
G = np.arange(8, dtype=np.float32)
two, one, half = np.float32(2), np.float32(1), np.float32(0.5)
for i in range(8):
    for j in range(8):
        if i + j < m + 8 and (i != 3 or j != 3):
            x = A[i, j]
            if x > 1:
                y = x * two
                t = y * (y - one)
            elif x < -1:
                t = -x
            else:
                t = x + half
            B[i, j] = np.float32(t) * np.float32(m)
for i in range(8):
    c = None
    for k in range(8):
        if i + k < m + 8 and (i != 3 or k != 3):
            if k == 0:
                c = G[i]
            c = max(c, B[i, k])
    C[i] = c
np.save('ks_B.npy', B)
np.save('ks_C.npy', C)
