#pragma once
// A small XML well-formedness check for the SVG the exporters write (no XML library on every
// build machine): one root element, tags nest and match, attributes are quoted and unique, '&'
// starts a known entity, no '<' inside text or attribute values. Returns "" or the first problem.
#include <set>
#include <string>
#include <vector>

namespace hipstudio::testing {

inline std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0, roots = 0;
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.'; };
  auto check_text = [&](size_t a, size_t b) -> std::string {
    for (size_t k = a; k < b; ++k) {
      if (s[k] == '<') return "'<' in text at " + std::to_string(k);
      if (s[k] == '&') {
        const size_t semi = s.find(';', k);
        if (semi == std::string::npos || semi > k + 8) return "bad entity at " + std::to_string(k);
        const std::string e = s.substr(k, semi - k + 1);
        if (e != "&amp;" && e != "&lt;" && e != "&gt;" && e != "&quot;" && e != "&apos;" && e.rfind("&#", 0) != 0)
          return "unknown entity " + e;
      }
    }
    return "";
  };
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  while (i < s.size()) {
    const size_t lt = s.find('<', i);
    const size_t text_end = lt == std::string::npos ? s.size() : lt;
    if (std::string p = check_text(i, text_end); !p.empty()) return p;
    if (open.empty() && s.find_first_not_of(" \n\r\t", i) < text_end) return "text outside the root element";
    if (lt == std::string::npos) break;
    if (s.compare(lt, 4, "<!--") == 0) {
      const size_t end = s.find("-->", lt);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    size_t k = lt + 1;
    const bool closing = s[k] == '/';
    if (closing) ++k;
    const size_t name_begin = k;
    while (k < s.size() && name_char(s[k])) ++k;
    const std::string name = s.substr(name_begin, k - name_begin);
    if (name.empty()) return "empty tag name at " + std::to_string(lt);
    std::set<std::string> attrs;
    while (true) {
      while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
      if (k >= s.size()) return "unterminated tag <" + name;
      if (s[k] == '>' || (s[k] == '/' && k + 1 < s.size() && s[k + 1] == '>')) break;
      if (closing) return "attributes in a closing tag </" + name;
      const size_t ab = k;
      while (k < s.size() && name_char(s[k])) ++k;
      const std::string attr = s.substr(ab, k - ab);
      if (attr.empty() || k >= s.size() || s[k] != '=') return "bad attribute in <" + name + "> at " + std::to_string(ab);
      if (!attrs.insert(attr).second) return "duplicate attribute " + attr + " in <" + name + ">";
      ++k;
      if (k >= s.size() || (s[k] != '"' && s[k] != '\'')) return "unquoted attribute " + attr;
      const char q = s[k];
      const size_t ve = s.find(q, k + 1);
      if (ve == std::string::npos) return "unterminated attribute " + attr;
      if (std::string p = check_text(k + 1, ve); !p.empty()) return "in attribute " + attr + ": " + p;
      k = ve + 1;
    }
    const bool self_closing = s[k] == '/';
    i = k + (self_closing ? 2 : 1);
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> does not close " + (open.empty() ? "anything" : "<" + open.back() + ">");
      open.pop_back();
    } else {
      if (open.empty() && ++roots > 1) return "more than one root element";
      if (!self_closing) open.push_back(name);
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

}  // namespace hipstudio::testing
