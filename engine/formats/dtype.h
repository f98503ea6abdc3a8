#pragma once
// Element types of tensors in weight files, spelled as safetensors spells them, and the scalar
// conversions between float and the two 16-bit float formats (no hardware support assumed).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hipstudio {

enum class StoredDType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(StoredDType dtype);         // bytes per element: F64 -> 8, BF16 -> 2, BOOL -> 1
const char* dtype_name(StoredDType dtype);    // "F32", "BF16", ... (safetensors spelling)
std::optional<StoredDType> dtype_from_name(std::string_view name);  // nullopt for names we do not support
const char* supported_dtype_names();    // "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL" (for errors)

// bfloat16 is the top half of a float32. Rounding is to nearest, ties to even; NaN stays NaN.
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);
// IEEE binary16: subnormals handled exactly; overflow gives infinity; round to nearest even.
float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);

}  // namespace hipstudio
