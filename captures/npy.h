#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0): the way researchers hand us Q/K/V captured
// from any framework, and the way masks and outputs go back to them. Only what the tools need:
// little-endian float32 '<f4', float64 '<f8', int32 '<i4', int64 '<i8', float16 '<f2' and uint16
// '<u2' (captures store bfloat16 bits in it, numpy having no bfloat16), C order. Reading checks
// everything a damaged or unexpected file can get wrong and throws hipstudio::InputError naming
// the file, the problem and the fix; writing goes through captures/atomic_file.h's one rule.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/formats/errors.h"

namespace hipstudio::captures {

enum class NpyDType { F32, F64, I32, I64, F16, U16 };

const char* npy_descr(NpyDType t);      // "<f4", "<f8", "<i4", "<i8", "<f2", "<u2"
const char* npy_type_name(NpyDType t);  // "float32", ...
int64_t npy_itemsize(NpyDType t);

template <class T> struct NpyTypeOf;
template <> struct NpyTypeOf<float> { static constexpr NpyDType value = NpyDType::F32; };
template <> struct NpyTypeOf<double> { static constexpr NpyDType value = NpyDType::F64; };
template <> struct NpyTypeOf<int32_t> { static constexpr NpyDType value = NpyDType::I32; };
template <> struct NpyTypeOf<int64_t> { static constexpr NpyDType value = NpyDType::I64; };
template <> struct NpyTypeOf<uint16_t> { static constexpr NpyDType value = NpyDType::U16; };  // or F16 bits: see raw16()

struct NpyArray {
  std::string name;                // the file it came from (for error messages)
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;      // C order; empty for a 0-d array
  std::vector<unsigned char> bytes;  // numel * itemsize little-endian element bytes

  int64_t numel() const;
  // Typed view; throws InputError naming the file when T is not the stored dtype.
  template <class T> const T* data() const {
    require_dtype(NpyTypeOf<T>::value);
    return reinterpret_cast<const T*>(bytes.data());
  }
  // The 16-bit elements of a float16 or uint16 array (the caller knows which format they hold).
  const uint16_t* raw16() const { return reinterpret_cast<const uint16_t*>(bytes.data()); }
  // Throws InputError "NAME: expected float32 ('<f4') but the file holds ..." with a fix.
  void require_dtype(NpyDType expected) const;
  // Throws InputError unless shape has `rank` dimensions; `what` describes them ("[H, T, D]").
  void require_rank(size_t rank, const std::string& what) const;
};

// Non-finite data: float inputs a computation takes from the user (Q/K/V for `mask`, a capture's
// stored inputs) must hold finite values, or every number made from them is NaN with exit 0. Throws
// InputError "SOURCE: the array holds NaN at index [i, j, k] (element n of m); WHAT needs finite
// values: FIX" for the first non-finite element of `values` (C order over `shape`).
void require_finite(const float* values, const std::vector<int64_t>& shape, const std::string& source, const std::string& what,
                    const std::string& fix);

// Reads and validates a whole .npy file. `name` defaults to the path in messages.
NpyArray read_npy(const std::string& path);

// Validates and decodes an in-memory .npy image (what read_npy does after reading the bytes).
NpyArray parse_npy(const unsigned char* data, size_t size, const std::string& name);

// A validated .npy image's header and a view of its element bytes (inside `data`, which must
// outlive it): parse_npy's checks without the copy, for arrays read out of a mapped file.
struct NpyView {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;
  const unsigned char* elements = nullptr;  // numel * itemsize little-endian bytes, any alignment
  size_t nbytes = 0;
  int64_t numel() const;
};
NpyView parse_npy_view(const unsigned char* data, size_t size, const std::string& name);

// Encodes a .npy image (version 1.0, or 2.0 when the header would not fit; 64-byte aligned data).
std::vector<unsigned char> encode_npy(NpyDType dtype, const std::vector<int64_t>& shape, const void* data);

// Writes PATH atomically: PATH.tmp is written, flushed and renamed over PATH. Throws InputError
// naming the path and the system's reason on failure (PATH.tmp is removed).
void write_npy(const std::string& path, NpyDType dtype, const std::vector<int64_t>& shape, const void* data);

template <class T>
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<T>& values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != static_cast<int64_t>(values.size())) {
    throw InputError(path + ": " + std::to_string(values.size()) + " values do not fill the shape (" +
                     std::to_string(n) + " elements)");
  }
  write_npy(path, NpyTypeOf<T>::value, shape, values.data());
}

}  // namespace hipstudio::captures
