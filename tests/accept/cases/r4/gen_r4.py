# Inputs of the outsider round 4 tests (tests/accept/outsider_r4_test.cpp), written by NumPy
# (and PyTorch for bf16) as a user would: run with /usr/bin/python3 from this folder.
import numpy as np
import torch

np.save('Ab.npy', np.array([True, False, True]))
np.save('A8.npy', np.array([127, -128, 3], dtype=np.int8))
np.save('A16.npy', np.array([32767, -5, 3], dtype=np.int16))
np.save('A32.npy', np.array([2147483647, -5, 3], dtype=np.int32))
np.save('A64.npy', np.array([2**63 - 1, -5, 9007199254740993], dtype=np.int64))
np.save('U8.npy', np.array([255, 0, 3], dtype=np.uint8))
np.save('U16.npy', np.array([65535, 0, 3], dtype=np.uint16))
np.save('U32.npy', np.array([2**32 - 1, 0, 3], dtype=np.uint32))
np.save('H.npy', np.array([65504, 0.1, 3], dtype=np.float16))
np.save('F.npy', np.array([1e38, 0.1, 3], dtype=np.float32))
np.save('D.npy', np.array([1e308, 0.1, 3], dtype=np.float64))
# numpy format versions 2.0 and 3.0 of F
np.lib.format.write_array(open('F_v2.npy', 'wb'), np.load('F.npy'), version=(2, 0))
np.lib.format.write_array(open('F_v3.npy', 'wb'), np.load('F.npy'), version=(3, 0))
# scalars as 0-d arrays
np.save('n0.npy', np.array(3, dtype=np.int32))
np.save('n64.npy', np.array(3))  # int64: wrong dtype for an i32 scalar
np.save('a0.npy', np.array(2.0, dtype=np.float32))
np.save('k0.npy', np.array(5))
np.save('h0.npy', np.array(0.5, dtype=np.float16))
np.save('f0.npy', np.array(True))
np.save('u0.npy', np.array(7, dtype=np.uint8))
np.save('A3.npy', np.arange(3, dtype=np.float32))
np.save('A23.npy', np.arange(6, dtype=np.float32).reshape(2, 3))
np.save('A3d.npy', np.arange(3, dtype=np.float64))
# f16 / bf16
np.save('h_a.npy', np.array([1.5, 300, -2.25, 0.001, 65504], dtype=np.float16))
b = torch.tensor([1.5, 300, -2.25, 0.001, 3e38], dtype=torch.bfloat16)
np.save('h_b.npy', b.view(torch.int16).numpy().view(np.uint16))
# integer division operands
np.save('ia.npy', np.array([7, -7, 7, -7, -2147483648, 5], dtype=np.int32))
np.save('ib.npy', np.array([2, 2, -2, -2, -1, 3], dtype=np.int32))
np.save('mv_x.npy', np.array([3e9, -3e9, np.nan, -2.7, 300.5], dtype=np.float32))
# dtypes NumPy has and the contract does not
m = np.arange(6, dtype=np.float32).reshape(2, 3)
np.save('cplx.npy', m.astype(np.complex64))
np.save('str.npy', np.array([['a', 'b', 'c'], ['d', 'e', 'f']]))
np.save('rec.npy', np.zeros((2, 3), dtype=[('x', '<f4')]))
np.save('obj.npy', np.array([[1, 2, 3], [4, 5, 6]], dtype=object), allow_pickle=True)
np.save('fo.npy', np.asfortranarray(m))
np.save('be.npy', m.astype('>f4'))
