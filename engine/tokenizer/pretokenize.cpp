#include "engine/tokenizer/pretokenize.h"

#include <array>

#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };  // \p{L}, \p{N}, \s, the rest

// Text as code points with their classes; invalid UTF-8 bytes count as one "other" character each.
struct Chars {
  std::vector<uint32_t> cp;      // (n)
  std::vector<CharClass> cls;    // (n)
  std::vector<size_t> offset;    // (n + 1) byte offset of each character, then text.size()
};

Chars classify(std::string_view text) {
  Chars chars;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = utf8_next(text, pos);
    chars.cp.push_back(c.valid ? c.codepoint : 0xFFFD);
    chars.cls.push_back(!c.valid ? kOther
                        : is_unicode_letter(c.codepoint) ? kLetter
                        : is_unicode_number(c.codepoint) ? kNumber
                        : is_unicode_whitespace(c.codepoint) ? kSpace
                                                              : kOther);
    chars.offset.push_back(pos);
    pos += c.length;
  }
  chars.offset.push_back(text.size());
  return chars;
}

// Length of the regex match at character i (at least 1: the alternatives cover every character).
size_t match_length(const Chars& s, size_t i, SplitRegex regex) {
  const size_t n = s.cp.size();
  const auto cls = [&](size_t k) { return k < n ? s.cls[k] : kOther; };
  const auto is = [&](size_t k, uint32_t c) { return k < n && s.cp[k] == c; };
  const auto run = [&](size_t k, CharClass c) {  // end of the run of class c starting at k
    while (k < n && s.cls[k] == c) ++k;
    return k;
  };
  const bool gpt2 = regex == SplitRegex::Gpt2;

  // 's|'t|'re|'ve|'m|'ll|'d (ASCII case-insensitive for Llama-3/Qwen2).
  if (is(i, '\'') && i + 1 < n) {
    const auto lower = [&](size_t k) -> uint32_t {
      if (k >= n) return 0;
      return !gpt2 && s.cp[k] >= 'A' && s.cp[k] <= 'Z' ? s.cp[k] + 32 : s.cp[k];
    };
    const uint32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  if (gpt2) {
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional leading space joins the run after it.
    const size_t start = is(i, ' ') && i + 1 < n && cls(i + 1) != kSpace ? i + 1 : i;
    if (cls(start) != kSpace) return run(start, cls(start)) - i;
  } else {
    // `[^\r\n\p{L}\p{N}]?\p{L}+`: any one non-letter, non-digit, non-newline char may lead a word.
    if (cls(i) == kLetter) return run(i, kLetter) - i;
    if (cls(i + 1) == kLetter && cls(i) != kNumber && !is(i, '\r') && !is(i, '\n')) return run(i + 1, kLetter) - i;
    // `\p{N}{1,3}` or `\p{N}`.
    if (cls(i) == kNumber) {
      const size_t most = regex == SplitRegex::Llama3 ? 3 : 1;
      size_t k = i;
      while (k < n && k - i < most && s.cls[k] == kNumber) ++k;
      return k - i;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`.
    const size_t start = is(i, ' ') && cls(i + 1) == kOther ? i + 1 : i;
    if (cls(start) == kOther) {
      size_t k = run(start, kOther);
      while (is(k, '\r') || is(k, '\n')) ++k;
      return k - i;
    }
  }
  // Whitespace from here on.
  const size_t end = run(i, kSpace);
  if (!gpt2) {
    // `\s*[\r\n]+`: backtracking makes this end just after the run's last newline.
    for (size_t k = end; k > i; --k)
      if (is(k - 1, '\r') || is(k - 1, '\n')) return k - i;
  }
  // `\s+(?!\S)` keeps the last space for the word after it; `\s+` takes a lone space before one.
  if (end == n || end - i == 1) return end - i;
  return end - 1 - i;
}

std::array<uint32_t, 256> byte_to_codepoint_table() {
  std::array<uint32_t, 256> table{};
  uint32_t next_free = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? b : next_free++;
  }
  return table;
}

const std::array<uint32_t, 256>& byte_to_codepoint() {
  static const std::array<uint32_t, 256> table = byte_to_codepoint_table();
  return table;
}

}  // namespace

std::optional<SplitRegex> split_regex_from_pattern(std::string_view pattern) {
  for (SplitRegex regex : {SplitRegex::Gpt2, SplitRegex::Llama3, SplitRegex::Qwen2})
    if (pattern == split_regex_pattern(regex)) return regex;
  return std::nullopt;
}

const char* split_regex_pattern(SplitRegex regex) {
  switch (regex) {
    case SplitRegex::Gpt2: return kGpt2Pattern;
    case SplitRegex::Llama3: return kLlama3Pattern;
    case SplitRegex::Qwen2: return kQwen2Pattern;
  }
  return "";
}

std::vector<std::string_view> split_with_regex(std::string_view text, SplitRegex regex) {
  const Chars chars = classify(text);
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < chars.cp.size();) {
    const size_t length = match_length(chars, i, regex);
    pieces.push_back(text.substr(chars.offset[i], chars.offset[i + length] - chars.offset[i]));
    i += length;
  }
  return pieces;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(out, byte_to_codepoint()[static_cast<unsigned char>(c)]);
  return out;
}

int byte_level_decode(uint32_t codepoint) {
  if (codepoint < 256 && byte_to_codepoint()[codepoint] == codepoint) return static_cast<int>(codepoint);
  if (codepoint >= 256 && codepoint < 256 + 68) {
    for (int b = 0; b < 256; ++b)
      if (byte_to_codepoint()[b] == codepoint) return b;
  }
  return -1;
}

}  // namespace hipstudio
