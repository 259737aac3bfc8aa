# Inputs and NumPy / PyTorch references of outsider round 17 (tests/accept/outsider_r17_test.cpp).
# Run with /usr/bin/python3 (NumPy, PyTorch) from this directory; independent of tirc.
import random

import numpy as np
import torch

# floats.tir: one store per literal, random bit patterns of every float dtype (finite values),
# written as Python's repr (shortest round trip in f64) of the exact value; the reference is
# the bit pattern itself. tirc must store each literal exactly, and its printed text must read
# back to the same bits.
random.seed(17)
vals = {}
for dt, npdt, bits in (('f16', np.float16, 16), ('f32', np.float32, 32), ('f64', np.float64, 64)):
    vs = []
    while len(vs) < 40:
        v = np.array([random.getrandbits(bits)], dtype='u%d' % (bits // 8)).view(npdt)[0]
        if np.isfinite(v):
            vs.append(v)
    vals[dt] = np.array(vs, dtype=npdt)
bf = []
while len(bf) < 40:
    b = random.getrandbits(16)
    v = torch.tensor([b - 65536 if b >= 32768 else b], dtype=torch.int16).view(torch.bfloat16).float().item()
    if np.isfinite(v):
        bf.append((b, v))
src = '# Random finite bit patterns of every float dtype as literals (gen_r17.py).\n'
src += 'func floats() -> (H: f16[40], F: f32[40], D: f64[40], G: bf16[40]) {\n  block b() {\n'
for name, dt in (('H', 'f16'), ('F', 'f32'), ('D', 'f64')):
    for i, v in enumerate(vals[dt]):
        src += '    %s[%d] = %r\n' % (name, i, float(v))
for i, (b, v) in enumerate(bf):
    src += '    G[%d] = %r\n' % (i, v)
src += '  }\n}\n'
open('floats.tir', 'w').write(src)
np.save('ref_fl_H.npy', vals['f16'])
np.save('ref_fl_F.npy', vals['f32'])
np.save('ref_fl_D.npy', vals['f64'])
np.save('ref_fl_G.npy', np.array([b for b, v in bf], np.uint16))  # bf16 as its bits, as tirc writes it

# half.tir: f16 / bf16 arithmetic and casts.
h = np.array([1.0, 65504, -0.33, 6e-8], np.float16)
np.save('h_A.npy', h)
with np.errstate(over='ignore'):
    np.save('ref_h_C.npy', h * np.float16(1000) + np.float16(0.1))
    np.save('ref_h_E.npy', h.astype(np.float32) + np.float32(1.5))
    cube = torch.tensor(h) * torch.tensor(h) * torch.tensor(h)
np.save('ref_h_G.npy', cube.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))

# unary.tir: intrinsics at special values.
x = np.array([2.5, -0.5, 0.0, -0.0, -1.0, 1.5, np.inf, -np.inf], np.float32)
np.save('un_X.npy', x)
t = torch.tensor(x)
with np.errstate(all='ignore'):
    refs = {
        'R': np.round(x),
        'S': torch.sigmoid(t * 100).numpy(),
        'E': np.expm1(x * np.float32(100)),
        'L': np.log1p(x),
        'Q': (np.float32(1) / np.sqrt(x)).astype(np.float32),
        'H': np.round(x.astype(np.float16) * np.float16(1000)),
        'G': np.sign(x) + torch.erf(t * 10).numpy(),
        'P': np.power(x, np.float32(0.5)) + np.power(x, np.float32(0)),
    }
for k, v in refs.items():
    np.save('ref_un_%s.npy' % k, v)

# nan_inf.tir / casts.tir / int_div.tir inputs.
np.save('nan_A1.npy', np.array([np.nan, -np.inf, 2.0, 0.0], np.float32))
np.save('nan_A2.npy', np.array([1, -np.inf, np.nan, 0.0], np.float32))
np.save('cast_A.npy', np.array([np.nan, -np.inf, np.inf, -1.5, 300.7, -0.0], np.float32))
np.save('div_A.npy', np.array([7, -7, 7, -7, -2147483648, 0], np.int32))
np.save('div_B.npy', np.array([2, 2, -2, -2, -1, 3], np.int32))
np.save('div_B0.npy', np.array([2, 2, -2, -2, 0, 3], np.int32))
