#include "engine/tokenizer/utf8.h"

#include <algorithm>
#include <cstdio>

namespace hipstudio {
namespace {

bool in_ranges(const CodepointRange* ranges, size_t count, uint32_t codepoint) {
  const CodepointRange* end = ranges + count;
  const CodepointRange* it = std::upper_bound(ranges, end, codepoint,
                                              [](uint32_t cp, const CodepointRange& r) { return cp < r.first; });
  return it != ranges && codepoint <= (it - 1)->last;
}

}  // namespace

Utf8Char utf8_next(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  const Utf8Char invalid{lead, 1, false};
  if (lead < 0x80) return {lead, 1, true};
  uint32_t length, codepoint, minimum;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, codepoint = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, codepoint = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, codepoint = lead & 0x07, minimum = 0x10000;
  } else {
    return invalid;
  }
  if (pos + length > text.size()) return invalid;
  for (uint32_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return invalid;
    codepoint = (codepoint << 6) | (byte(pos + i) & 0x3F);
  }
  if (codepoint < minimum || codepoint > 0x10FFFF || (codepoint >= 0xD800 && codepoint <= 0xDFFF)) return invalid;
  return {codepoint, length, true};
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool utf8_is_valid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = utf8_next(text, pos);
    if (!c.valid) return false;
    pos += c.length;
  }
  return true;
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(bytes[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

std::string utf8_display(std::string_view bytes) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    const Utf8Char c = utf8_next(bytes, pos);
    if (c.valid) {
      out.append(bytes.substr(pos, c.length));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned>(c.codepoint));
      out += hex;
    }
    pos += c.length;
  }
  return out;
}

bool is_unicode_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(unicode_tables::kLetters, unicode_tables::kLetters_count, cp);
}

bool is_unicode_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(unicode_tables::kNumbers, unicode_tables::kNumbers_count, cp);
}

bool is_unicode_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace hipstudio
