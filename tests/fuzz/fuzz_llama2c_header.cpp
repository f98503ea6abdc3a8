// libFuzzer target: the llama2.c checkpoint header (engine/formats/llama2c_checkpoint.h).
// Input: the file's first bytes (28-byte header, then anything). The checked file size is the
// input's size, or, when the input holds at least 36 bytes, the little-endian uint64 at bytes
// 28..35 (so the fuzzer can claim the size of a real 60 MB checkpoint without writing one).
// Inputs under 28 bytes go through read_llama2c_layout on a scratch file (the short-file check).
#include <cstring>

#include "engine/formats/llama2c_checkpoint.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kLlama2cHeaderBytes) {
    const std::string path = fuzz::write_scratch("model.bin", data, size);
    HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS(read_llama2c_layout(path));
    return 0;
  }
  uint64_t claimed = size;
  if (size >= kLlama2cHeaderBytes + 8) std::memcpy(&claimed, data + kLlama2cHeaderBytes, 8);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const Llama2cLayout l = parse_llama2c_header(data, claimed, "fuzz.bin");
    // Accepted: the layout must describe exactly the claimed file, arrays in order, inside it.
    fuzz::require(l.file_size == claimed, "accepted a header whose layout does not match the file size");
    const uint64_t order[] = {l.token_embedding, l.rms_att, l.wq, l.wk, l.wv, l.wo,
                              l.rms_ffn, l.w1, l.w2, l.w3, l.rms_final};
    uint64_t previous = kLlama2cHeaderBytes;
    for (uint64_t at : order) {
      fuzz::require(at >= previous && at <= l.file_size, "array offsets out of order or outside the file");
      previous = at;
    }
    const ModelConfig& c = l.config;
    fuzz::require(c.dim > 0 && c.n_heads > 0 && c.dim % c.n_heads == 0 && c.head_dim * c.n_heads == c.dim,
                  "accepted inconsistent head dimensions");
    fuzz::require(l.wcls + static_cast<uint64_t>(c.vocab_size) * c.dim * sizeof(float) <= l.file_size,
                  "classifier outside the file");
  });
  return 0;
}
