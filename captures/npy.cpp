#include "captures/npy.h"

#include "captures/atomic_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace hipstudio::captures {
namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kPrefix = 8;                // magic + major + minor
constexpr size_t kMaxHeader = 1 << 20;       // numpy itself refuses much smaller headers by default
constexpr const char* kSupported = "float32 '<f4', float64 '<f8', int32 '<i4', int64 '<i8', float16 '<f2' or uint16 '<u2'";

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw InputError(name + ": " + what); }

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Where the header text lies in the image and what it says.
struct Header {
  size_t data_offset = 0;  // first byte of the array data
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;
};

// Size of the prefix + length field for a version, after checking magic and version.
size_t length_field_end(const unsigned char* p, size_t size, const std::string& name, uint32_t* header_len) {
  if (size < kPrefix || std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    fail(name, "not a NumPy .npy file (the magic string \\x93NUMPY is missing); save arrays with numpy.save");
  }
  const int major = p[6], minor = p[7];
  int len_bytes = 0;
  if (major == 1 && minor == 0) {
    len_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    len_bytes = 4;
  } else {
    fail(name, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (size < kPrefix + len_bytes) fail(name, "file ends inside the .npy header; the file is truncated");
  *header_len = read_le(p + kPrefix, len_bytes);
  return kPrefix + len_bytes;
}

// A tiny reader of the Python dict literal numpy writes: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }. Accepts either quote, any key order, trailing commas and Python 2 'L' suffixes.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    bool have_descr = false, have_order = false, have_shape = false;
    std::string descr;
    Header h;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() == '[') bad("structured dtypes (a list 'descr') are not supported; save a plain " + std::string(kSupported) + " array");
        descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        const bool fortran = parse_bool();
        if (fortran) {
          fail(name_, "fortran_order arrays are not supported; save with np.ascontiguousarray");
        }
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "' (a .npy header has only descr, fortran_order and shape)");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') break;
      bad("expected ',' or '}' after the value of '" + key + "'");
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) bad("unexpected text after the header dictionary");
    if (!have_descr || !have_order || !have_shape) {
      bad(std::string("the header lacks '") + (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
    }
    h.dtype = dtype_of(descr);
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) { fail(name_, "malformed .npy header: " + what); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string at offset " + std::to_string(pos_));
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    for (;;) {
      skip_ws();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad("shape entries must be non-negative integers");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad("a shape entry is too large");
        v = v * 10 + (peek() - '0');
        ++pos_;
      }
      if (peek() == 'L') ++pos_;
      shape.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++pos_;
    return shape;
  }
  NpyDType dtype_of(const std::string& d) {
    if (d == "<f4") return NpyDType::F32;
    if (d == "<f8") return NpyDType::F64;
    if (d == "<i4") return NpyDType::I32;
    if (d == "<i8") return NpyDType::I64;
    if (d == "<f2") return NpyDType::F16;
    if (d == "<u2") return NpyDType::U16;
    if (!d.empty() && d[0] == '>') {
      fail(name_, "big-endian dtype '" + d + "' is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))");
    }
    fail(name_, "dtype '" + d + "' is not supported; save the array as " + kSupported);
  }

  const std::string& s_;
  const std::string& name_;
  size_t pos_ = 0;
};

// Parses magic, version and header from the first bytes of a file (at least the whole header).
Header parse_header(const unsigned char* p, size_t size, const std::string& name) {
  uint32_t header_len = 0;
  const size_t text_begin = length_field_end(p, size, name, &header_len);
  if (header_len > kMaxHeader) fail(name, "the .npy header claims " + std::to_string(header_len) + " bytes; the file is damaged");
  if (size < text_begin + header_len) fail(name, "file ends inside the .npy header; the file is truncated");
  const std::string text(reinterpret_cast<const char*>(p + text_begin), header_len);
  if (text.find('\0') != std::string::npos) fail(name, "malformed .npy header: it contains a NUL byte");
  Header h = HeaderParser(text, name).parse();
  h.data_offset = text_begin + header_len;
  return h;
}

// numel * itemsize with overflow checks; also validates the data size against what is available.
uint64_t expected_bytes(const Header& h, const std::string& name) {
  uint64_t n = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d)) {
      fail(name, "the shape in the header is too large to exist");
    }
    n *= static_cast<uint64_t>(d);
  }
  return n * static_cast<uint64_t>(npy_itemsize(h.dtype));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void check_data_size(const Header& h, uint64_t available, const std::string& name) {
  const uint64_t want = expected_bytes(h, name);
  if (want > available) {
    fail(name, "the header's shape " + shape_text(h.shape) + " needs " + std::to_string(want) +
                   " bytes of data but the file holds " + std::to_string(available) + "; the file is truncated");
  }
  if (want < available) {
    fail(name, "the file holds " + std::to_string(available - want) + " bytes after the " +
                   shape_text(h.shape) + " array; the header's shape does not match the data");
  }
}

std::string header_text(NpyDType dtype, const std::vector<int64_t>& shape) {
  std::string s = std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  s += "), }";
  return s;
}

}  // namespace

const char* npy_descr(NpyDType t) {
  switch (t) {
    case NpyDType::F32: return "<f4";
    case NpyDType::F64: return "<f8";
    case NpyDType::I32: return "<i4";
    case NpyDType::I64: return "<i8";
    case NpyDType::F16: return "<f2";
    case NpyDType::U16: return "<u2";
  }
  return "?";
}

const char* npy_type_name(NpyDType t) {
  switch (t) {
    case NpyDType::F32: return "float32";
    case NpyDType::F64: return "float64";
    case NpyDType::I32: return "int32";
    case NpyDType::I64: return "int64";
    case NpyDType::F16: return "float16";
    case NpyDType::U16: return "uint16";
  }
  return "?";
}

int64_t npy_itemsize(NpyDType t) {
  switch (t) {
    case NpyDType::F16:
    case NpyDType::U16: return 2;
    case NpyDType::F32:
    case NpyDType::I32: return 4;
    case NpyDType::F64:
    case NpyDType::I64: return 8;
  }
  return 8;
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void NpyArray::require_dtype(NpyDType expected) const {
  if (dtype == expected) return;
  throw InputError(name + ": expected " + npy_type_name(expected) + " ('" + npy_descr(expected) +
                   "') but the file holds " + npy_type_name(dtype) + " ('" + npy_descr(dtype) +
                   "'); convert with arr.astype(np." + npy_type_name(expected) + ")");
}

void NpyArray::require_rank(size_t rank, const std::string& what) const {
  if (shape.size() == rank) return;
  throw InputError(name + ": expected " + std::to_string(rank) + " dimensions " + what + " but the array has shape " +
                   shape_text(shape));
}

NpyArray parse_npy(const unsigned char* data, size_t size, const std::string& name) {
  const Header h = parse_header(data, size, name);
  check_data_size(h, size - h.data_offset, name);
  NpyArray a;
  a.name = name;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.bytes.assign(data + h.data_offset, data + size);
  return a;
}

NpyView parse_npy_view(const unsigned char* data, size_t size, const std::string& name) {
  const Header h = parse_header(data, size, name);
  check_data_size(h, size - h.data_offset, name);
  NpyView v;
  v.dtype = h.dtype;
  v.shape = h.shape;
  v.elements = data + h.data_offset;
  v.nbytes = size - h.data_offset;
  return v;
}

int64_t NpyView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  f.seekg(0, std::ios::end);
  const std::streamoff file_size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (file_size < 0) fail(path, "cannot determine the file size");
  // Read the prefix and header first so that a bad header never costs a read of the data.
  std::vector<unsigned char> head(static_cast<size_t>(std::min<std::streamoff>(file_size, 12)));
  f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  uint32_t header_len = 0;
  const size_t text_begin = length_field_end(head.data(), head.size(), path, &header_len);
  if (header_len > kMaxHeader) fail(path, "the .npy header claims " + std::to_string(header_len) + " bytes; the file is damaged");
  const size_t header_end = text_begin + header_len;
  if (static_cast<uint64_t>(file_size) < header_end) fail(path, "file ends inside the .npy header; the file is truncated");
  head.resize(header_end);
  f.seekg(0, std::ios::beg);
  f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(header_end));
  if (!f) fail(path, "read error in the .npy header");
  const Header h = parse_header(head.data(), head.size(), path);
  check_data_size(h, static_cast<uint64_t>(file_size) - h.data_offset, path);

  NpyArray a;
  a.name = path;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.bytes.resize(static_cast<size_t>(file_size) - h.data_offset);
  f.read(reinterpret_cast<char*>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()));
  if (!f) fail(path, "read error in the array data");
  return a;
}

std::vector<unsigned char> encode_npy(NpyDType dtype, const std::vector<int64_t>& shape, const void* data) {
  for (int64_t d : shape) {
    if (d < 0) throw InputError("encode_npy: negative dimension in shape " + shape_text(shape));
  }
  std::string text = header_text(dtype, shape);
  // Version 1.0 stores the header length in 2 bytes; longer headers (huge ranks) need 2.0.
  const bool v2 = text.size() + 1 + 10 + 64 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = ((prefix + text.size() + 1 + 63) / 64) * 64;  // data starts 64-byte aligned
  text.append(total - prefix - text.size() - 1, ' ');
  text.push_back('\n');
  Header h;
  h.dtype = dtype;
  h.shape = shape;
  const uint64_t nbytes = expected_bytes(h, "encode_npy");
  std::vector<unsigned char> out;
  out.reserve(total + nbytes);
  out.insert(out.end(), kMagic, kMagic + 6);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(text.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<unsigned char>(len >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (nbytes) out.insert(out.end(), bytes, bytes + nbytes);
  return out;
}

void write_npy(const std::string& path, NpyDType dtype, const std::vector<int64_t>& shape, const void* data) {
  const std::vector<unsigned char> image = encode_npy(dtype, shape, data);
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(image.data()), image.size()));
}

void require_finite(const float* values, const std::vector<int64_t>& shape, const std::string& source, const std::string& what,
                    const std::string& fix) {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(values[i])) continue;
    std::string index;
    int64_t rest = i;
    std::vector<int64_t> at(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      at[d] = shape[d] > 0 ? rest % shape[d] : 0;
      rest = shape[d] > 0 ? rest / shape[d] : 0;
    }
    for (size_t d = 0; d < at.size(); ++d) index += (d ? ", " : "") + std::to_string(at[d]);
    const std::string kind = std::isnan(values[i]) ? "NaN" : values[i] > 0 ? "+Inf" : "-Inf";
    throw InputError(source + ": the array holds " + kind + " at index [" + index + "] (element " + std::to_string(i) + " of " +
                     std::to_string(n) + "); " + what + " needs finite values: " + fix);
  }
}

}  // namespace hipstudio::captures
