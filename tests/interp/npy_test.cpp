// .npy I/O: round trip of every dtype, files written by NumPy read back (v1/v2/v3), files we
// write read by NumPy, and every rejected format with its message.
#include "runtime/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace tirc {
namespace {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/tirc_npy_XXXXXX";
    path = mkdtemp(t);
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return path + "/" + f; }
};

int python(const std::string& code) {
  std::string file =
      std::filesystem::temp_directory_path() / ("tirc_npy_py_" + std::to_string(::getpid()) + ".py");
  std::ofstream(file) << code;
  int rc = std::system(("/usr/bin/python3 " + file + " > /dev/null 2>&1").c_str());
  std::filesystem::remove(file);
  return rc;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const DType kAll[] = {DType::Bool, DType::I8,  DType::I16, DType::I32,  DType::I64, DType::U8,
                      DType::U16,  DType::U32, DType::F16, DType::BF16, DType::F32, DType::F64};

}  // namespace

TEST(Npy, RoundTripEveryDtype) {
  TmpDir d;
  for (DType t : kAll) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
      NDArray a(t, shape);
      for (int64_t i = 0; i < a.numel(); ++i)
        a.set(i, is_float(t) ? i * 0.5 - 1 : i % 2 + (t == DType::Bool ? 0 : i));
      std::string p = d / "x.npy";
      write_npy(p, a);
      NDArray b = read_npy(p, t);
      ASSERT_EQ(b.dtype(), t);
      ASSERT_EQ(b.shape(), shape);
      for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.get(i), b.get(i)) << dtype_name(t);
      EXPECT_EQ(std::filesystem::file_size(p) % 64, a.nbytes() % 64);  // header padded to 64
    }
  }
}

TEST(Npy, ReadsWhatNumPyWrites) {
  TmpDir d;
  std::string code = "import numpy as np\nfrom numpy.lib import format as F\nd='" + d.path + "'\n" + R"(
vals = [0, 1, -2, 3, 100, -7]
for name, t in [('b1', np.bool_), ('i1', np.int8), ('i2', np.int16), ('i4', np.int32), ('i8', np.int64),
                ('u1', np.uint8), ('u2', np.uint16), ('u4', np.uint32), ('f2', np.float16), ('f4', np.float32),
                ('f8', np.float64)]:
    a = np.array(vals).astype(t).reshape(2, 3)
    np.save(f'{d}/{name}.npy', a)
np.save(f'{d}/scalar.npy', np.float32(2.5))
np.save(f'{d}/big.npy', np.arange(6, dtype=np.int64) * (1 << 40))
for v in [(1, 0), (2, 0), (3, 0)]:
    with open(f'{d}/v{v[0]}.npy', 'wb') as f:
        F.write_array(f, np.arange(6, dtype=np.float32).reshape(3, 2), version=v)
np.save(f'{d}/fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(f'{d}/bigend.npy', np.arange(4, dtype='>f4'))
np.save(f'{d}/u8.npy', np.arange(4, dtype=np.uint64))
np.save(f'{d}/struct.npy', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
bf = (np.array([1.0, -2.5, 3.0], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
np.save(f'{d}/bf16.npy', bf)
)";
  ASSERT_EQ(python(code), 0);
  double vals[] = {0, 1, -2, 3, 100, -7};
  for (auto [name, t] : std::vector<std::pair<std::string, DType>>{{"i1", DType::I8},
                                                                   {"i2", DType::I16},
                                                                   {"i4", DType::I32},
                                                                   {"i8", DType::I64},
                                                                   {"f2", DType::F16},
                                                                   {"f4", DType::F32},
                                                                   {"f8", DType::F64}}) {
    NDArray a = read_npy(d / (name + ".npy"));
    ASSERT_EQ(a.dtype(), t) << name;
    ASSERT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(a.get(i), vals[i]) << name;
  }
  NDArray u1 = read_npy(d / "u1.npy");
  EXPECT_EQ(u1.dtype(), DType::U8);
  EXPECT_EQ(u1.get(2), 254);  // -2 wrapped by NumPy
  NDArray b1 = read_npy(d / "b1.npy");
  EXPECT_EQ(b1.dtype(), DType::Bool);
  EXPECT_EQ(b1.get(0), 0);
  EXPECT_EQ(b1.get(2), 1);
  EXPECT_EQ(read_npy(d / "u4.npy").dtype(), DType::U32);
  EXPECT_EQ(read_npy(d / "u2.npy").dtype(), DType::U16);
  NDArray s = read_npy(d / "scalar.npy");
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.get(0), 2.5);
  NDArray big = read_npy(d / "big.npy");
  EXPECT_EQ(big.ptr<int64_t>()[5], int64_t(5) << 40);
  for (int v = 1; v <= 3; ++v) {
    NDArray a = read_npy(d / ("v" + std::to_string(v) + ".npy"));
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(a.get(5), 5.0);
  }
  NDArray bf = read_npy(d / "bf16.npy", DType::BF16);
  EXPECT_EQ(bf.dtype(), DType::BF16);
  EXPECT_EQ(bf.get(1), -2.5);

  // Fortran order and big-endian data come back as C-ordered, host-order arrays.
  NDArray fo = read_npy(d / "fortran.npy");
  ASSERT_EQ(fo.shape(), (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(fo.get(i), i) << "Fortran element " << i;
  NDArray be = read_npy(d / "bigend.npy");
  ASSERT_EQ(be.dtype(), DType::F32);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(be.get(i), i) << "big-endian element " << i;
  EXPECT_EQ(error_of([&] { read_npy(d / "u8.npy"); }), d / "u8.npy" + ": unsupported .npy dtype '<u8'");
  EXPECT_EQ(error_of([&] { read_npy(d / "struct.npy"); }),
            d / "struct.npy" + ": structured .npy dtypes are not supported");
  EXPECT_EQ(error_of([&] { read_npy(d / "f8.npy", DType::F32); }),
            d / "f8.npy" + ": expected dtype f32 ('<f4'), file has '<f8'");
  EXPECT_EQ(error_of([&] { read_npy(d / "missing.npy"); }),
            "cannot read " + d / "missing.npy" + ": No such file or directory");
  // Truncated data.
  std::string bytes;
  {
    std::ifstream in(d / "f8.npy", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(error_of([&] { parse_npy(bytes.substr(0, bytes.size() - 8), "t.npy"); }),
            "t.npy: truncated .npy data (40 bytes, expected 48)");
  EXPECT_EQ(error_of([&] { parse_npy("hello world", "t.npy"); }), "t.npy: not a .npy file (bad magic)");
}

TEST(Npy, NumPyReadsWhatWeWrite) {
  TmpDir d;
  for (DType t : kAll) {
    NDArray a(t, {2, 3});
    for (int i = 0; i < 6; ++i) a.set(i, t == DType::Bool ? i % 2 : (is_float(t) ? i * 0.25 - 0.5 : i + 1));
    write_npy(d / (std::string(dtype_name(t)) + ".npy"), a);
  }
  write_npy(d / "scalar.npy", NDArray(DType::F64, {}));
  std::string code = "import numpy as np\nd='" + d.path + "'\n" + R"(
for name, t in [('bool', np.bool_), ('i8', np.int8), ('i16', np.int16), ('i32', np.int32), ('i64', np.int64),
                ('u8', np.uint8), ('u16', np.uint16), ('u32', np.uint32)]:
    a = np.load(f'{d}/{name}.npy')
    assert a.dtype == t and a.shape == (2, 3), name
    want = np.arange(6) % 2 if name == 'bool' else np.arange(6) + 1
    assert (a.reshape(-1) == want.astype(t)).all(), name
for name, t in [('f16', np.float16), ('f32', np.float32), ('f64', np.float64)]:
    a = np.load(f'{d}/{name}.npy')
    assert a.dtype == t and (a.reshape(-1) == np.arange(6) * 0.25 - 0.5).all(), name
b = np.load(f'{d}/bf16.npy')
assert b.dtype == np.uint16
f = (b.astype(np.uint32) << 16).view(np.float32)
assert (f.reshape(-1) == np.arange(6) * 0.25 - 0.5).all()
s = np.load(f'{d}/scalar.npy')
assert s.shape == () and s.dtype == np.float64
)";
  EXPECT_EQ(python(code), 0);
}

}  // namespace tirc
