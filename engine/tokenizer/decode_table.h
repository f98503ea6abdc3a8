#pragma once
// Decoding shared by both tokenizer families: every id maps to fixed bytes, so decode is a lookup
// and a concatenation, which is what makes it prefix-stable for streaming.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace hipstudio {

struct DecodeTable {
  std::vector<std::string> bytes;    // (vocab) what each token decodes to, raw bytes
  std::vector<std::string> display;  // (vocab) token_text: valid UTF-8
  bool strip_dummy_prefix = false;   // SentencePiece: drop one leading ' ' at the start / after BOS
  int32_t bos = -1, eos = -1;
};

// Implements everything but encode() from a DecodeTable.
class TableTokenizer : public Tokenizer {
 public:
  std::string decode(const std::vector<int32_t>& ids) const override;
  std::string token_text(int32_t id) const override;
  int32_t bos_id() const override { return table_.bos; }
  int32_t eos_id() const override { return table_.eos; }
  int32_t vocab_size() const override { return static_cast<int32_t>(table_.bytes.size()); }

 protected:
  explicit TableTokenizer(DecodeTable table) : table_(std::move(table)) {}
  DecodeTable table_;
};

}  // namespace hipstudio
