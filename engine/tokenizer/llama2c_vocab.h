#pragma once
// Reading llama2.c's tokenizer.bin: int32 max_token_length, then vocab_size x {float score,
// int32 len, len bytes}. Pieces spell SentencePiece's "▁" as " ".
#include <cstdint>
#include <string>
#include <vector>

namespace hipstudio {

// Layout of a SentencePiece vocabulary with byte fallback, which llama2.c's format assumes.
constexpr int32_t kLlama2cUnk = 0, kLlama2cBos = 1, kLlama2cEos = 2;
constexpr int32_t kLlama2cFirstByte = 3;    // ids 3..258 are the bytes 0x00..0xFF
constexpr int32_t kLlama2cFirstPiece = 259;  // ordinary pieces start here

struct Llama2cVocab {
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;  // (vocab_size) bytes as stored
  std::vector<float> scores;        // (vocab_size) merge priority: higher merges first
  bool has_byte_tokens() const { return pieces.size() >= static_cast<size_t>(kLlama2cFirstPiece); }
  // First id that is looked up by text: control and byte tokens never are.
  int32_t first_piece() const { return has_byte_tokens() ? kLlama2cFirstPiece : kLlama2cFirstByte; }
};

// Throws InputError on a missing, truncated or corrupt file, or one whose token count is not vocab_size.
Llama2cVocab read_llama2c_vocab(const std::string& path, int32_t vocab_size);

}  // namespace hipstudio
