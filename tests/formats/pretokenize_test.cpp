// The hand-written GPT-2 / Llama-3 / Qwen2 split regexes against matches derived by hand from the
// regex semantics (leftmost alternative, greedy, backtracking into the lookahead).
#include "engine/tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(const std::string& text, SplitRegex regex) {
  Pieces out;
  for (std::string_view piece : split_with_regex(text, regex)) out.emplace_back(piece);
  return out;
}

TEST(PreTokenize, Gpt2) {
  const auto r = SplitRegex::Gpt2;
  // Contractions, a space joining the word after it, the last of two spaces kept for the next word,
  // a whitespace run ending before a number, numbers of any length, punctuation runs.
  EXPECT_EQ(split("Hello world's  end\n\n 123 4567!!", r),
            (Pieces{"Hello", " world", "'s", " ", " end", "\n\n", " 123", " 4567", "!!"}));
  EXPECT_EQ(split("DON'T don't", r), (Pieces{"DON", "'", "T", " don", "'t"}));  // case-sensitive
  EXPECT_EQ(split("(hello)", r), (Pieces{"(", "hello", ")"}));
  EXPECT_EQ(split("ok.\n\nNext", r), (Pieces{"ok", ".", "\n", "\n", "Next"}));
  EXPECT_EQ(split("end   ", r), (Pieces{"end", "   "}));
  EXPECT_EQ(split("\tx", r), (Pieces{"\t", "x"}));
  EXPECT_EQ(split("naïve café 北京 ١٢٣ x²", r), (Pieces{"naïve", " café", " 北京", " ١٢٣", " x", "²"}));
  EXPECT_EQ(split("", r), Pieces{});
}

TEST(PreTokenize, Llama3) {
  const auto r = SplitRegex::Llama3;
  EXPECT_EQ(split("Hello world's  end\n\n 123 4567!!", r),
            (Pieces{"Hello", " world", "'s", " ", " end", "\n\n", " ", "123", " ", "456", "7", "!!"}));
  EXPECT_EQ(split("DON'T don't", r), (Pieces{"DON", "'T", " don", "'t"}));  // case-insensitive
  EXPECT_EQ(split("(hello)", r), (Pieces{"(hello", ")"}));                  // one non-letter may lead a word
  EXPECT_EQ(split("ok.\n\nNext", r), (Pieces{"ok", ".\n\n", "Next"}));       // newlines join punctuation
  EXPECT_EQ(split("a \n\n  b", r), (Pieces{"a", " \n\n", " ", " b"}));      // \s*[\r\n]+ ends at the last newline
  EXPECT_EQ(split("\tx\ny", r), (Pieces{"\tx", "\n", "y"}));                // \t may lead a word, \n may not
  EXPECT_EQ(split("naïve café 北京 ١٢٣", r), (Pieces{"naïve", " café", " 北京", " ", "١٢٣"}));
}

TEST(PreTokenize, Qwen2) {
  EXPECT_EQ(split("in 2025, 42", SplitRegex::Qwen2), (Pieces{"in", " ", "2", "0", "2", "5", ",", " ", "4", "2"}));
  EXPECT_EQ(split("it'LL", SplitRegex::Qwen2), (Pieces{"it", "'LL"}));
}

TEST(PreTokenize, PiecesCoverTheText) {
  const std::string text = "Mixed: \xF0\x9F\x98\x80 emoji,\r\n\tCRLF\xFF bad byte 1234567 'LL ok  ";
  for (SplitRegex r : {SplitRegex::Gpt2, SplitRegex::Llama3, SplitRegex::Qwen2}) {
    std::string joined;
    for (const std::string& piece : split(text, r)) {
      EXPECT_FALSE(piece.empty());
      joined += piece;
    }
    EXPECT_EQ(joined, text);
  }
}

TEST(PreTokenize, PatternsRecognised) {
  for (SplitRegex r : {SplitRegex::Gpt2, SplitRegex::Llama3, SplitRegex::Qwen2})
    EXPECT_EQ(split_regex_from_pattern(split_regex_pattern(r)), r);
  EXPECT_FALSE(split_regex_from_pattern("\\s+").has_value());
}

TEST(PreTokenize, ByteLevelMap) {
  EXPECT_EQ(byte_level_encode(" "), "\xC4\xA0");    // 'Ġ' (U+0120)
  EXPECT_EQ(byte_level_encode("\n"), "\xC4\x8A");   // 'Ċ' (U+010A)
  EXPECT_EQ(byte_level_encode("a!"), "a!");
  EXPECT_EQ(byte_level_encode("\xC3\xA9"), "\xC3\x83\xC2\xA9");  // é = C3 A9 -> "Ã©"
  for (int b = 0; b < 256; ++b) {
    const std::string encoded = byte_level_encode(std::string(1, static_cast<char>(b)));
    const Utf8Char c = utf8_next(encoded, 0);
    ASSERT_EQ(c.length, encoded.size());
    ASSERT_EQ(byte_level_decode(c.codepoint), b);
  }
  EXPECT_EQ(byte_level_decode(0x20), -1);  // ' ' itself is not a byte-level character
}

TEST(Utf8, CompletePrefixAndDisplay) {
  const std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t cut = 0; cut < 4; ++cut) EXPECT_EQ(utf8_complete_prefix("ab" + emoji.substr(0, cut)), 2u) << cut;
  EXPECT_EQ(utf8_complete_prefix("ab" + emoji), 6u);
  EXPECT_EQ(utf8_display("a\xE4"), "a<0xE4>");
  EXPECT_EQ(utf8_display("\xC0\xAF"), "<0xC0><0xAF>");  // overlong '/' is invalid
  EXPECT_TRUE(is_unicode_letter(U'ß'));
  EXPECT_TRUE(is_unicode_letter(U'北'));
  EXPECT_FALSE(is_unicode_letter(U'1'));
  EXPECT_TRUE(is_unicode_number(U'١'));
  EXPECT_TRUE(is_unicode_whitespace(0x3000));
  EXPECT_FALSE(is_unicode_whitespace(U'x'));
}

}  // namespace
}  // namespace hipstudio
