#pragma once
// SHA-256 (FIPS 180-4) for the identities a capture records: the model's weight files and the
// capture's own arrays. Small and dependency-free; speed is not a goal (~200 MB/s).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hipstudio::captures {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> finish();  // the object is spent afterwards
  std::string finish_hex();          // 64 lowercase hex digits

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t used_ = 0;
  uint64_t length_ = 0;
};

std::string sha256_hex(std::string_view bytes);
// Streams a file; throws InputError naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace hipstudio::captures
