#pragma once
// The properties every accepted tokenizer must keep, for the tokenizer fuzz targets: decode is
// documented prefix-stable (streaming relies on it) and ignores ids outside the vocabulary; every
// token's display text is valid UTF-8.
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/fuzz/fuzz_common.h"

namespace hipstudio::fuzz {

inline void check_decode(const Tokenizer& tok, std::vector<int32_t> ids) {
  ids.push_back(-7);
  ids.push_back(tok.vocab_size());
  const std::string whole = tok.decode(ids);
  for (size_t m = 0; m < ids.size(); ++m) {
    const std::string part = tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + m));
    require(whole.compare(0, part.size(), part) == 0, "decode of a prefix is not a prefix of the decode");
  }
}

inline void check_token_texts(const Tokenizer& tok) {
  for (int32_t id = -1; id <= tok.vocab_size() && id < 600; ++id)
    require(utf8_is_valid(tok.token_text(id)), "token_text is not valid UTF-8");
}

}  // namespace hipstudio::fuzz
