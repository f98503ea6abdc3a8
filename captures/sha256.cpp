#include "captures/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {

// A failing EVP call means libcrypto itself is broken (no memory, SHA-256 disabled by a provider
// configuration), not the user's input.
void require(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("libcrypto SHA-256: ") + what + " failed");
}

}  // namespace

void Sha256::FreeContext::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::runtime_error("libcrypto SHA-256: EVP_MD_CTX_new failed");
  require(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

void Sha256::update(std::string_view bytes) {
  if (!bytes.empty()) require(EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()), "EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  require(EVP_DigestFinal_ex(ctx_.get(), out.data(), &n), "EVP_DigestFinal_ex");
  if (n != out.size()) throw std::runtime_error("libcrypto SHA-256: digest of unexpected length");
  return out;
}

std::string Sha256::finish_hex() {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t v : finish()) {
    s.push_back(digits[v >> 4]);
    s.push_back(digits[v & 15]);
  }
  return s;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish_hex();
}

std::string sha256_file_hex(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open to hash it (" + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint for readahead; failure changes nothing
  Sha256 h;
  std::vector<char> buf(size_t{4} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path + ": read error while hashing (" + std::strerror(errno) + ")");
    }
    h.update(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  return h.finish_hex();
}

}  // namespace hipstudio::captures
