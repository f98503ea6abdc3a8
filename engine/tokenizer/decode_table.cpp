#include "engine/tokenizer/decode_table.h"

namespace hipstudio {

std::string TableTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  bool at_start = true;
  int32_t previous = -1;
  for (int32_t id : ids) {
    const int32_t before = previous;
    previous = id;
    if (id < 0 || id >= vocab_size() || id == table_.bos || id == table_.eos) continue;
    const std::string& piece = table_.bytes[static_cast<size_t>(id)];
    const bool strip = table_.strip_dummy_prefix && (at_start || (before >= 0 && before == table_.bos)) &&
                       !piece.empty() && piece[0] == ' ';
    out.append(piece, strip ? 1 : 0, std::string::npos);
    at_start = false;
  }
  return out;
}

std::string TableTokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "<id " + std::to_string(id) + ">";
  return table_.display[static_cast<size_t>(id)];
}

}  // namespace hipstudio
