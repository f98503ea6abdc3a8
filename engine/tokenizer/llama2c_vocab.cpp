#include "engine/tokenizer/llama2c_vocab.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "engine/formats/errors.h"

namespace hipstudio {
namespace {

// No real tokenizer has pieces this long; a larger length means the file is not a tokenizer.bin.
constexpr int32_t kMaxPieceBytes = 1 << 16;

[[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) {
  throw InputError(path + ": " + problem + "; " + fix);
}

}  // namespace

Llama2cVocab read_llama2c_vocab(const std::string& path, int32_t vocab_size) {
  const std::string fix = "use the tokenizer.bin that came with the llama2.c model (re-download it if in doubt)";
  if (vocab_size <= 0)
    fail(path, "vocab_size " + std::to_string(vocab_size) + " is not positive", "check the model's config");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open (") + std::strerror(errno) + ")", "check the path and permissions");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  const auto read_i32 = [&](int32_t& value) {
    if (data.size() - pos < 4) return false;
    std::memcpy(&value, data.data() + pos, 4);
    pos += 4;
    return true;
  };

  Llama2cVocab vocab;
  if (!read_i32(vocab.max_token_length))
    fail(path, "is " + std::to_string(data.size()) + " bytes, too short to be a llama2.c tokenizer.bin", fix);
  if (vocab.max_token_length <= 0 || vocab.max_token_length > kMaxPieceBytes)
    fail(path, "max_token_length " + std::to_string(vocab.max_token_length) + " is not a sane length", fix);
  vocab.pieces.reserve(static_cast<size_t>(vocab_size));
  vocab.scores.reserve(static_cast<size_t>(vocab_size));
  for (int32_t i = 0; i < vocab_size; ++i) {
    const std::string where = "token " + std::to_string(i);
    float score = 0;
    int32_t length = 0;
    if (data.size() - pos < 8)
      fail(path, "ends inside " + where + " of the " + std::to_string(vocab_size) +
                     " the model expects (truncated, or the model's vocab_size is larger than this tokenizer's)",
           fix);
    std::memcpy(&score, data.data() + pos, 4);
    pos += 4;
    read_i32(length);
    if (std::isnan(score)) fail(path, where + " has a NaN score", fix);
    if (length < 0 || length > vocab.max_token_length)
      fail(path, where + " has length " + std::to_string(length) + ", outside 0.." +
                     std::to_string(vocab.max_token_length) + " (max_token_length)", fix);
    if (data.size() - pos < static_cast<size_t>(length))
      fail(path, "ends inside the bytes of " + where + " (truncated)", fix);
    vocab.pieces.emplace_back(data, pos, static_cast<size_t>(length));
    vocab.scores.push_back(score);
    pos += static_cast<size_t>(length);
  }
  if (pos != data.size()) {
    // Count what the file really holds so the message can say which vocab_size would fit.
    size_t count = static_cast<size_t>(vocab_size);
    size_t scan = pos;
    while (data.size() - scan >= 8) {
      int32_t length = 0;
      std::memcpy(&length, data.data() + scan + 4, 4);
      if (length < 0 || data.size() - scan - 8 < static_cast<size_t>(length)) break;
      scan += 8 + static_cast<size_t>(length);
      ++count;
    }
    fail(path, "holds more than the " + std::to_string(vocab_size) + " tokens the model expects" +
                   (scan == data.size() ? " (it holds " + std::to_string(count) + ")" : std::string()),
         "use the tokenizer.bin that matches this model's vocab_size");
  }
  return vocab;
}

}  // namespace hipstudio
