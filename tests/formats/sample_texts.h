#pragma once
// Texts the tokenizer tests share: hand-picked hard cases and random mixes of varied fragments.
#include <random>
#include <string>
#include <vector>

namespace hipstudio::testing {

inline const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> texts = {
      "Once upon a time",
      "Once upon a time, there was a little girl named Lily. She loved to play outside.",
      "",
      " ",
      "a\nb",
      "\n",
      "Héllo wörld, ça va? Ærøskøbing.",
      "中文 and 日本語 mixed with 한국어",
      "I love 😀! 🎉🎉",
      "tabs\tand\r\nCRLF\n\nparagraphs",
      "    four leading spaces and trailing   ",
      "a                                      b",
      "Tim's dog can't run. 3.14159 + 2 = 5.14159",
  };
  return texts;
}

// Words, runs of spaces, newlines, tabs, accents, CJK, emoji, digits, punctuation.
inline std::vector<std::string> random_texts(size_t count, uint32_t seed) {
  static const std::vector<std::string> fragments = {
      "the", " Once", " upon", "a", " time", "Lily", " ", "  ", "     ", "\n", "\n\n", "\t", "é", "ü",
      "naïve", "中文", "北京", "😀", "🎉", "0", "42", "2025", ".", ",", "!", "'s", "\"", "(", ")", "-",
      "Ω", "ß", "Привет", "こんにちは", "x", "Z", "ing", "?!", "<", ">", "≈", "ab", "ba", "abab"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string text;
    const size_t n = rng() % 14;
    for (size_t k = 0; k < n; ++k) text += fragments[rng() % fragments.size()];
    out.push_back(text);
  }
  return out;
}

}  // namespace hipstudio::testing
