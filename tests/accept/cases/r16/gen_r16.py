# Inputs and NumPy references of outsider round 16 (tests/accept/outsider_r16_test.cpp).
# Run with /usr/bin/python3 (NumPy) from this directory; independent of tirc.
import numpy as np

# npy_dtypes.tir: every dtype, in every layout NumPy writes (C / Fortran order, big-endian,
# format versions 1.0 / 2.0 / 3.0).
a = np.arange(6).reshape(2, 3)
ins = {
    'A': np.asfortranarray((a * 1.5).astype('>f2')),  # Fortran order, big-endian f16
    'B': a % 2 == 0,
    'C': (a * 50).astype(np.int64).astype(np.int8),  # 0, 50, 100, -106, -56, -6
    'D': (a * 60).astype(np.uint8),
    'E': (a * 10**17).astype(np.int64),
    'F': np.asfortranarray(a * 1.0),
    'G': (a * 20000).astype('>u2'),
    'H': (a * 1000000000).astype(np.uint32),
    'I': np.asfortranarray((a * -1000).astype('>i2')),
    'K': np.array([[0x3f80, 0x4000, 0xbf80], [0x3fc0, 0x7f80, 0x0000]], np.uint16),  # bf16 bits: 1 2 -1 1.5 inf 0
    'Z': np.zeros((0, 3), np.float32),
}
for k, v in ins.items():
    np.save('dt_%s.npy' % k, v)
with open('dt_A_v3.npy', 'wb') as f:
    np.lib.format.write_array(f, ins['A'], version=(3, 0))
with open('dt_A_v2.npy', 'wb') as f:
    np.lib.format.write_array(f, ins['A'], version=(2, 0))
refs = {
    'OA': (ins['A'].astype(np.float16) * np.float16(2)).astype('<f2'),
    'OB': ~ins['B'],
    'OC': (ins['C'] + np.int8(1)).astype(np.int8),
    'OD': (ins['D'] + np.uint8(1)).astype(np.uint8),
    'OE': ins['E'] * 3,
    'OF': ins['F'] / 2.0,
    'OG': (ins['G'].astype(np.uint16) + np.uint16(1)).astype('<u2'),
    'OH': ins['H'] + np.uint32(1),
    'OI': (ins['I'].astype(np.int16) - np.int16(1)).astype('<i2'),
    'OK': np.array([[0x4000, 0x4080, 0xc000], [0x4040, 0x7f80, 0x0000]], np.uint16),
    'OZ': np.zeros((0, 3), np.float32),
}
for k, v in refs.items():
    np.save('ref_dt_%s.npy' % k, np.ascontiguousarray(v))

# conv_relu.tir: zero-padded 1-D correlation, then ReLU.
rng = np.random.default_rng(16)
x = rng.standard_normal((2, 16)).astype(np.float32)
w = rng.standard_normal(3).astype(np.float32)
np.save('cr_X.npy', x)
np.save('cr_W.npy', w)
p = np.pad(x, ((0, 0), (1, 1)))
y = np.zeros((2, 16), np.float32)
for n in range(2):
    for i in range(16):
        acc = np.float32(0)
        for r in range(3):
            acc = np.float32(acc + p[n, i + r] * w[r])
        y[n, i] = max(acc, np.float32(0))
np.save('ref_cr_Y.npy', y)

# spec_matmul.tir: C = A @ B on the rows the `where i < 100` keeps.
A = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
B = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
np.save('mm_A.npy', A)
np.save('mm_B.npy', B)
np.save('ref_mm_C100.npy', (A[:100].astype(np.float64) @ B.astype(np.float64)).astype(np.float32))

# casts.tir: float -> int saturates (docs/interp.md), NaN -> 0; f16 / bf16 round to nearest even.
np.save('cast_X.npy', np.array([3e9, -3e9, np.nan, np.inf, -1.5, 300.7, 65520.0, 1.00390625], np.float32))

# minmax.tir: max / min reductions with NaN and infinities (torch.maximum / minimum: NaN wins).
np.save('mm_nan.npy', np.array([[1, np.nan, 2], [np.nan, 1, 2], [1, 2, np.nan], [-np.inf, np.inf, 0]], np.float32))

# zero_d.tir: 0-d arrays for a 0-d buffer and for scalar parameters; a 1-element array.
np.save('z_A.npy', np.float32(2.5))
np.save('z_s.npy', np.array(3, np.float32))
np.save('z_n.npy', np.array(7, np.int32))
np.save('z_A1.npy', np.array([2.5], np.float32))

# cumsum.tir
np.save('cs_A.npy', np.arange(32, dtype=np.float32).reshape(4, 8))
np.save('ref_cs_B.npy', (np.cumsum(np.arange(32, dtype=np.float32).reshape(4, 8), 1) * 0.5).astype(np.float32))

# statements.tir: Q from the fixed T (T[i, j] = 16 i + j).
t = np.arange(256).reshape(16, 16).astype(np.float32)
s = np.where(t > 100, t, -t)
np.save('ref_st_Q.npy', np.minimum(np.maximum((s + 1 - 2) * 3, 0), 500).astype(np.float32))
