#include "runtime/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace tirc {
namespace {

const char kMagic[] = "\x93NUMPY";

struct Descr {
  char kind;  // 'b', 'i', 'u', 'f', 'V'
  int size;
};

std::optional<DType> dtype_of(char kind, int size) {
  switch (kind) {
    case 'b': return size == 1 ? std::optional(DType::Bool) : std::nullopt;
    case 'i':
      if (size == 1) return DType::I8;
      if (size == 2) return DType::I16;
      if (size == 4) return DType::I32;
      if (size == 8) return DType::I64;
      return std::nullopt;
    case 'u':
      if (size == 1) return DType::U8;
      if (size == 2) return DType::U16;
      if (size == 4) return DType::U32;
      return std::nullopt;
    case 'f':
      if (size == 2) return DType::F16;
      if (size == 4) return DType::F32;
      if (size == 8) return DType::F64;
      return std::nullopt;
    default: return std::nullopt;
  }
}

// Finds the value text after 'key': in a Python dict literal.
size_t find_key(const std::string& h, const std::string& key, const std::string& what) {
  for (const char* q : {"'", "\""}) {
    size_t p = h.find(std::string(q) + key + q);
    if (p != std::string::npos) {
      size_t c = h.find(':', p + key.size() + 2);
      if (c == std::string::npos) break;
      size_t v = c + 1;
      while (v < h.size() && h[v] == ' ') ++v;
      return v;
    }
  }
  throw Error(what + ": malformed .npy header (no '" + key + "')");
}

}  // namespace

std::string npy_descr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::I8: return "|i1";
    case DType::I16: return "<i2";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::U8: return "|u1";
    case DType::U16: return "<u2";
    case DType::U32: return "<u4";
    case DType::F16: return "<f2";
    case DType::BF16: return "<u2";
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
    default: break;
  }
  throw Error("no .npy dtype for " + std::string(dtype_name(t)));
}

NDArray parse_npy(const std::string& bytes, const std::string& what, std::optional<DType> expect) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    throw Error(what + ": not a .npy file (bad magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(what + ": truncated .npy header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw Error(what + ": unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < hstart + hlen) throw Error(what + ": truncated .npy header");
  std::string h = bytes.substr(hstart, hlen);

  // descr
  size_t p = find_key(h, "descr", what);
  if (p >= h.size() || (h[p] != '\'' && h[p] != '"'))
    throw Error(what + ": structured .npy dtypes are not supported");
  char q = h[p];
  size_t e = h.find(q, p + 1);
  if (e == std::string::npos) throw Error(what + ": malformed .npy header");
  std::string descr = h.substr(p + 1, e - p - 1);
  // No byte-order character ('f4', as some writers put it): native order, as np.dtype('f4').
  std::string descr_text = descr;
  if (!descr.empty() && std::isalpha(static_cast<unsigned char>(descr[0]))) descr = "=" + descr;
  if (descr.size() < 3) throw Error(what + ": unsupported .npy dtype '" + descr_text + "'");
  char order = descr[0], kind = descr[1];
  int size = std::atoi(descr.c_str() + 2);
  bool swap = order == '>' && size > 1;  // big-endian data: bytes swapped per element below
  if (order != '<' && order != '|' && order != '=' && order != '>')
    throw Error(what + ": unsupported .npy dtype '" + descr_text + "'");
  std::optional<DType> dt;
  bool void2 = kind == 'V' && size == 2;
  if (void2)
    dt = DType::BF16;
  else
    dt = dtype_of(kind, size);
  if (!dt) throw Error(what + ": unsupported .npy dtype '" + descr_text + "'");
  if (expect) {
    bool ok = *dt == *expect || (*expect == DType::BF16 && *dt == DType::U16);
    if (!ok)
      throw Error(what + ": expected dtype " + std::string(dtype_name(*expect)) + " ('" + npy_descr(*expect) +
                  "'), file has '" + descr_text + "'");
    dt = *expect;
  } else if (void2) {
    dt = DType::BF16;
  }

  // fortran_order
  p = find_key(h, "fortran_order", what);
  bool fortran = h.compare(p, 4, "True") == 0;  // what np.save(a.T) writes: permuted below
  if (!fortran && h.compare(p, 5, "False") != 0)
    throw Error(what + ": malformed .npy header (fortran_order)");

  // shape
  p = find_key(h, "shape", what);
  if (p >= h.size() || h[p] != '(') throw Error(what + ": malformed .npy header (shape)");
  e = h.find(')', p);
  if (e == std::string::npos) throw Error(what + ": malformed .npy header (shape)");
  std::vector<int64_t> shape;
  std::string inner = h.substr(p + 1, e - p - 1);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" \t\n");
    if (a == std::string::npos) continue;
    size_t b = item.find_last_not_of(" \tL\n");
    std::string num = item.substr(a, b - a + 1);
    char* endp = nullptr;
    errno = 0;
    long long v = std::strtoll(num.c_str(), &endp, 10);
    if (num.empty() || *endp != '\0' || v < 0 || errno == ERANGE)
      throw Error(what + ": malformed .npy shape (" + inner + ")");
    shape.push_back(v);
  }

  // The data must be in the file before anything is allocated: a header that claims a huge
  // shape on a short file is a truncated file, not an allocation failure.
  size_t dstart = hstart + hlen;
  size_t have = bytes.size() - dstart;
  {
    using u128 = unsigned __int128;
    const u128 cap = u128(1) << 64;  // saturate: dims < 2^63, so claim * d never overflows
    u128 claim = static_cast<u128>(size);
    for (int64_t d : shape) claim = std::min(cap, claim * static_cast<uint64_t>(d));
    if (claim > have)
      throw Error(
          what + ": truncated .npy data (" + std::to_string(have) + " bytes, expected " +
          (claim == cap ? std::string("more than 2^64") : std::to_string(static_cast<uint64_t>(claim))) +
          ")");
  }
  NDArray arr(*dt, shape);
  size_t need = arr.nbytes();
  if (have < need)
    throw Error(what + ": truncated .npy data (" + std::to_string(have) + " bytes, expected " +
                std::to_string(need) + ")");
  if (need) std::memcpy(arr.data(), bytes.data() + dstart, need);
  size_t esize = need / std::max<size_t>(1, static_cast<size_t>(arr.numel()));
  if (swap) {
    auto* b = static_cast<uint8_t*>(arr.data());
    for (size_t i = 0; i < need; i += esize) std::reverse(b + i, b + i + esize);
  }
  if (fortran && shape.size() > 1) {
    // Column-major to row-major: element (i0, ..., ik) sits at i0 + d0 * (i1 + d1 * (...)).
    NDArray c(*dt, shape);
    const auto* src = static_cast<const uint8_t*>(arr.data());
    auto* dst = static_cast<uint8_t*>(c.data());
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t n = 0; n < arr.numel(); ++n) {
      int64_t off = 0;
      for (size_t k = shape.size(); k-- > 0;) off = off * shape[k] + idx[k];
      std::memcpy(dst + n * esize, src + off * esize, esize);
      for (size_t k = shape.size(); k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
    arr = std::move(c);
  }
  if (*dt == DType::Bool) {
    auto* b = static_cast<uint8_t*>(arr.data());
    for (size_t i = 0; i < need; ++i) b[i] = b[i] != 0;
  }
  return arr;
}

NDArray read_npy(const std::string& path, std::optional<DType> expect) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("cannot read " + path + ": it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read " + path + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), path, expect);
}

std::string serialize_npy(const NDArray& a) {
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i) shape += std::to_string(a.shape()[i]) + ", ";
  if (a.shape().size() > 1)
    shape.resize(shape.size() - 2);
  else if (a.shape().size() == 1)
    shape.resize(shape.size() - 1);  // "(3,)"
  shape += ")";
  std::string h =
      "{'descr': '" + npy_descr(a.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts at a multiple of 64; the header ends with '\n'.
  size_t pre = 10;
  size_t total = (pre + h.size() + 1 + 63) / 64 * 64;
  int major = 1;
  if (total - pre > 65535) {
    pre = 12;
    total = (pre + h.size() + 1 + 63) / 64 * 64;
    major = 2;
  }
  h.append(total - pre - h.size() - 1, ' ');
  h += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(major);
  out += '\0';
  size_t hl = h.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += h;
  out.append(static_cast<const char*>(a.data()), a.nbytes());
  return out;
}

void write_npy(const std::string& path, const NDArray& a) {
  std::string s = serialize_npy(a);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write " + path);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
  if (!out) throw Error("cannot write " + path);
}

}  // namespace tirc
