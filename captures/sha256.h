#pragma once
// SHA-256 (FIPS 180-4) for the identities a capture records: the model's weight files and the
// capture's own arrays. libcrypto's EVP digest (OpenSSL), which uses the CPU's SHA extensions or
// vector code: an 8B model's 16 GB of weights hash in seconds, where a portable loop at ~200 MB/s
// took ~80 s on every `capture`. OpenSSL stays out of this header.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace hipstudio::captures {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> finish();  // the object is spent afterwards
  std::string finish_hex();          // 64 lowercase hex digits

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> ctx_;
};

std::string sha256_hex(std::string_view bytes);
// Streams a file; throws InputError naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace hipstudio::captures
