# Inputs and NumPy references of the outsider round 13 tests (tests/accept/outsider_r13_test.cpp),
# written by NumPy (and PyTorch for bf16) as a user would: run with /usr/bin/python3 from this
# folder.
import numpy as np
import torch

# 2 x 3 x 4 arrays of four dtypes in Fortran order, big-endian, or both (npy_layouts.tir).
h = (np.arange(24, dtype=np.float16) * 0.5 - 3).reshape(2, 3, 4)
np.save('h_be.npy', h.astype('>f2'))
np.save('h_fo_be.npy', np.asfortranarray(h).astype('>f2'))
bf = torch.tensor(h.astype(np.float32)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
np.save('g_fo.npy', np.asfortranarray(bf))
np.save('g_be.npy', bf.astype('>u2'))
b = (np.arange(24).reshape(2, 3, 4) % 3) == 0
np.save('b_fo.npy', np.asfortranarray(b))
i = (np.arange(24, dtype=np.int64) - 12).reshape(2, 3, 4) * 10**15
np.save('i_fo_be.npy', np.asfortranarray(i).astype('>i8'))
o = np.stack([h.reshape(-1).astype(np.float64), h.reshape(-1).astype(np.float64), b.reshape(-1), i.reshape(-1)])
np.save('layouts_ref.npy', o)
