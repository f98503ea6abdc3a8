#pragma once
// Hugging Face pre-tokenization pieces that byte-level BPE tokenizers need, by hand: the GPT-2,
// Llama-3 and Qwen2 split regexes (std::regex has no \p{L}) and GPT-2's byte -> printable-char map.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hipstudio {

enum class SplitRegex {
  Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,  // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,   // as Llama3 but \p{N} (one digit per piece)
};

// The SplitRegex a Split pre-tokenizer's "Regex" pattern spells, or nullopt for patterns we lack.
std::optional<SplitRegex> split_regex_from_pattern(std::string_view pattern);
const char* split_regex_pattern(SplitRegex regex);

// The successive regex matches of `text` (HF behavior "Isolated"); they concatenate back to text.
std::vector<std::string_view> split_with_regex(std::string_view text, SplitRegex regex);

// GPT-2's bytes_to_unicode: every byte becomes a printable character (' ' -> 'Ġ', '\n' -> 'Ċ').
std::string byte_level_encode(std::string_view bytes);
// The byte a byte-level character stands for, or -1 when the code point is not one of the 256.
int byte_level_decode(uint32_t codepoint);

}  // namespace hipstudio
