// captures/sha256 (libcrypto's EVP SHA-256): FIPS 180-4 known answers, and the digests the
// hand-written implementation it replaced gave on pseudo-random data of every padding case (so
// weights hashes and content_sha256 recorded by older captures still match), fed whole, in
// irregular pieces and through a file.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "captures/sha256.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {

// splitmix64 bytes: the data the old implementation's digests below were computed on.
std::string random_bytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    s[i] = static_cast<char>(z >> (8 * (i % 8)));
  }
  return s;
}

// (length, digest of random_bytes(length, 31 length + 7)) from the replaced portable SHA-256:
// lengths around the 55 / 56 / 64 byte padding edges, several blocks, and megabytes.
const std::vector<std::pair<size_t, std::string>>& old_digests() {
  static const std::vector<std::pair<size_t, std::string>> d = {
      {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {1, "f4f97c88c409dcf3789b5b518da3f7d266c488066e97a606e38a150779880735"},
      {3, "be8735a546cc1999b5f1239a71c0c685ae2ead4abebd97af49e5eb14ff381e9c"},
      {55, "f6c26788e67f7f2f6c165a0f24e7c8f343b2fe049e9495a4055d3bccc04a0aff"},
      {56, "b154827b271b55936679d536edeaea40633dc19d17ac1d033afe17ec451b86fb"},
      {57, "297412e6fba8122ee5fe5614aaddb88ed6da9b9fc8a1a32ef92d4d79bbf8e233"},
      {63, "d5b4d534a6f20191330c38591fd7a23b15d62b6b24a6403dc21059bbea4a70ad"},
      {64, "25ea5d89394feae57a3641fb177b0f59eec2e5266c50d638d92fafa1fbef9418"},
      {65, "c045556149c3c3b24649b37b1a1bb6d2d4f46c0122a022a3badade01c3b4b9c7"},
      {119, "605641c5f1f92e6c42e75eaeaea1252e703bc3f2367f69fd52dfbeeef37503a7"},
      {120, "019c1086ab463bc81389ab35c3db60a1623a3fb83d09275ae97f6f842cecc73b"},
      {127, "f25bc737ce3b4bc39227b7744862ccd55829cc4e08b8a7fdee429bf8ae59ffe2"},
      {128, "4b9d65a20d3b85eda1c144100c9e46a19300344679079cfca0987bcf3685747a"},
      {129, "cab5f8c9cf02959112f3e36fb661410f6988b9165c16eeac5df0b0807766afd9"},
      {1000, "4a3fd6ea39aae646cb7674f72faf5d570bbdcf056ed0d9ad52888da0bde29b46"},
      {4103, "6a47251097bfb954edb11b62cc4060dcec93610e0eb3c8c69c3f897e7d2a0bd2"},
      {65536, "46f3447e5d7e96fcb232cb6d25eef771067098f9eea738dfdd61d8780e033e42"},
      {1048589, "18a34763865435d5c7296287a8990b1f95731ad2c631cb4a00b5a0c9fbb9b0a3"},
      {3000017, "07fd9dfd7d75cc2a89621f7ebec182a6c9f6a961b38ee10fe37e7e25391785be"},
  };
  return d;
}

TEST(Sha256Evp, FipsKnownAnswers) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Evp, SameDigestsAsTheReplacedImplementationWholeAndInPieces) {
  for (const auto& [n, want] : old_digests()) {
    const std::string data = random_bytes(n, n * 31 + 7);
    EXPECT_EQ(sha256_hex(data), want) << n;
    Sha256 h;  // pieces of 1, 2, 3, ... bytes, crossing every block boundary differently
    size_t at = 0;
    for (size_t piece = 1; at < n; ++piece) {
      const size_t take = std::min(piece % 97, n - at);
      h.update(std::string_view(data).substr(at, take));
      at += take;
    }
    EXPECT_EQ(h.finish_hex(), want) << n << " in pieces";
  }
}

TEST(Sha256Evp, FilesHashAsTheirBytesAndAMissingFileIsNamed) {
  const auto path = std::filesystem::temp_directory_path() / "hipstudio-sha256-test.bin";
  const auto& [n, want] = old_digests().back();
  {
    std::ofstream f(path, std::ios::binary);
    const std::string data = random_bytes(n, n * 31 + 7);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  EXPECT_EQ(sha256_file_hex(path.string()), want);
  std::filesystem::remove(path);
  try {
    sha256_file_hex(path.string());
    FAIL() << "a missing file was hashed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hipstudio::captures
