// libFuzzer target: Hugging Face tokenizer.json (engine/tokenizer: load_hf_tokenizer, i.e. the JSON
// reader hf_json.cpp and the encoder built from it). The loader takes a path, so the input is written
// to a scratch folder's tokenizer.json (no tokenizer_config.json beside it). An accepted tokenizer
// must encode a fixed text to ids inside its vocabulary, decode prefix-stably and display every
// token as valid UTF-8.
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/tokenizer_checks.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("tokenizer.json", data, size);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const auto tok = load_hf_tokenizer(path);
    const int32_t vocab = tok->vocab_size();
    for (const bool bos : {false, true}) {
      const std::string text = bos ? "Once upon a time,  there was\n\n a cat 123 <s> caf\xC3\xA9 \xF0\x9F\x98\x80!"
                                   : std::string("\xE2\x96\x81 \xFF\x00 x", 8);
      std::vector<int32_t> ids = tok->encode(text, bos);
      for (int32_t id : ids) fuzz::require(id >= 0 && id < vocab, "encode produced an id outside the vocabulary");
      fuzz::check_decode(*tok, ids);
    }
    fuzz::check_token_texts(*tok);
  });
  return 0;
}
