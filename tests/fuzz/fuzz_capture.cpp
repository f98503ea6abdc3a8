// libFuzzer target: the capture file reader (captures/capture_read.cpp decode_capture, which runs
// the ZIP reader captures/zip_store.cpp, the manifest checks and parse_npy on every array).
//
// Random byte flips almost never get past a capture's CRC-32s and content hash, so a custom
// mutator also works on the structure: it unpacks the archive, mutates one entry's bytes (or the
// manifest), recomputes the manifest's content_sha256 and re-packs it with fresh CRCs. One mutation
// in four stays a plain byte mutation of the archive, which keeps the ZIP layer itself under test.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "captures/capture.h"
#include "captures/content_hash.h"
#include "captures/zip_store.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;
using namespace hipstudio::captures;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  std::vector<ZipEntry> entries;
  try {
    if (rng() % 4 == 0) throw InputError("plain byte mutation this time");
    entries = zip_decode(std::string_view(reinterpret_cast<const char*>(data), size), "mutator");
    if (entries.empty()) throw InputError("nothing to mutate");
    ZipEntry& target = entries[rng() % entries.size()];
    std::string bytes = target.data;
    const size_t room = bytes.size() + 64;
    bytes.resize(room);
    const size_t got = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes.data()), target.data.size(), room);
    bytes.resize(got);
    target.data = std::move(bytes);
    captures::rehash_capture_manifest(entries);
    const std::string packed = zip_encode(entries);
    if (packed.size() > max_size) throw InputError("too large");
    std::memcpy(data, packed.data(), packed.size());
    return packed.size();
  } catch (const InputError&) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // The read `open --print` and `report` make, which leaves the Q/K/V unread: it may accept what
  // the whole read refuses (damage inside them), but it must not crash or read out of bounds.
  try {
    CaptureReadOptions no_inputs;
    no_inputs.inputs = false;
    (void)decode_capture(bytes, "fuzz.hipcap", no_inputs);
  } catch (const InputError&) {
  }
  Capture c;
  try {
    c = decode_capture(bytes, "fuzz.hipcap");
  } catch (const InputError&) {
    return 0;
  }
  // An accepted capture must re-encode into one that is accepted again (the GUI's Save of an open
  // capture, `hipstudio report` reading what it wrote): a rejection here means the reader let
  // through something the writer cannot represent.
  try {
    (void)decode_capture(encode_capture(c), "fuzz.hipcap (re-encoded)");
  } catch (const InputError& e) {
    std::fprintf(stderr, "re-encoded capture rejected: %s\n", e.what());
    fuzz::require(false, "an accepted capture does not survive encode_capture -> decode_capture");
  }
  return 0;
}
