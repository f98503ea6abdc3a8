// libFuzzer target: llama2.c tokenizer.bin (engine/tokenizer: read_llama2c_vocab and the tokenizer
// built on it). Input: a little-endian uint16 vocab_size (what the model header would say; 0 means
// 65536), then the file. An accepted vocabulary must then encode and decode text without crashing,
// give ids inside the vocabulary, and produce valid UTF-8 for every token's display text.
#include <cstring>

#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/tokenizer_checks.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint16_t claimed = 0;
  std::memcpy(&claimed, data, 2);
  const int32_t vocab_size = claimed == 0 ? 65536 : claimed;
  const std::string path = fuzz::write_scratch("tokenizer.bin", data + 2, size - 2);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const auto tok = load_llama2c_tokenizer(path, vocab_size);
    fuzz::require(tok->vocab_size() == vocab_size, "tokenizer has another vocab_size than asked for");
    const std::string text = "Once upon a time, \xE4\xB8\x80 cat\n\xFF!";
    const std::vector<int32_t> ids = tok->encode(text, true);
    for (int32_t id : ids) fuzz::require(id >= 0 && id < vocab_size, "encode produced an id outside the vocabulary");
    fuzz::check_decode(*tok, ids);
    fuzz::check_token_texts(*tok);
  });
  return 0;
}
