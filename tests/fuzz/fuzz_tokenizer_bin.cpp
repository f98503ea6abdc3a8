// libFuzzer target: llama2.c tokenizer.bin (engine/tokenizer: read_llama2c_vocab and the tokenizer
// built on it). Input: a little-endian uint16 vocab_size (what the model header would say; 0 means
// 65536), then the file. An accepted vocabulary must then encode and decode text without crashing,
// give ids inside the vocabulary, and produce valid UTF-8 for every token's display text.
#include <cstring>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

namespace {
// decode is documented prefix-stable (streaming relies on it) and ignores ids outside the vocabulary.
void check_decode(const Tokenizer& tok, std::vector<int32_t> ids) {
  ids.push_back(-7);
  ids.push_back(tok.vocab_size());
  const std::string whole = tok.decode(ids);
  for (size_t m = 0; m < ids.size(); ++m) {
    const std::string part = tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + m));
    fuzz::require(whole.compare(0, part.size(), part) == 0, "decode of a prefix is not a prefix of the decode");
  }
}
}  // namespace

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
    check_decode(*tok, ids);
    for (int32_t id = -1; id <= vocab_size && id < 600; ++id)
      fuzz::require(utf8_is_valid(tok->token_text(id)), "token_text is not valid UTF-8");
  });
  return 0;
}
