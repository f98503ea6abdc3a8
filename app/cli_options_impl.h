#pragma once
// Template definitions of app/cli_options.h (included at its end).
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <type_traits>

namespace hipstudio::app {

namespace detail {
template <class T>
std::string number_text(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
template <class T>
std::string joined(const std::vector<T>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + number_text(values[i]);
  return s;
}

// A plain decimal integer ("-12", "+7", "18446744073709551616"): whether `text` is one and, when it
// is, its sign and whether it fits T. Other spellings CLI11 takes (0x1F, 0b101) go through its
// lexical_cast, which never sees a decimal too large for T: strtoull saturates there (2^64 became
// 2^64 - 1) and an int's overflow read as "not an integer".
struct DecimalInteger {
  bool decimal = false;   // sign? digits+
  bool negative = false;  // a '-' before digits that are not all zeros
};
inline DecimalInteger classify_decimal(const std::string& text) {
  DecimalInteger d;
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (i == text.size()) return d;
  bool nonzero = false;
  for (size_t j = i; j < text.size(); ++j) {
    if (text[j] < '0' || text[j] > '9') return d;
    nonzero = nonzero || text[j] != '0';
  }
  d.decimal = true;
  d.negative = text[0] == '-' && nonzero;
  return d;
}
// Whether the decimal `text` (classify_decimal said so) lies in [lo, hi], compared exactly.
template <class T>
bool decimal_in_range(const std::string& text, bool negative, T lo, T hi) {
  errno = 0;
  char* end = nullptr;
  if (negative) {
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE) return false;
    return std::is_signed<T>::value && v >= static_cast<long long>(lo) && v <= static_cast<long long>(hi);
  }
  const unsigned long long v = std::strtoull(text.c_str() + (text[0] == '+' || text[0] == '-'), &end, 10);
  if (errno == ERANGE) return false;
  return (lo <= T{0} || v >= static_cast<unsigned long long>(lo)) && hi >= T{0} && v <= static_cast<unsigned long long>(hi);
}
}  // namespace detail

template <class T>
std::string range_problem(const std::string& text, T lo, T hi) {
  // Integers name both ends (2^64 - 1 is a number a user can act on); a float open at the top its floor.
  const bool open_float = std::is_floating_point<T>::value && hi == std::numeric_limits<T>::max();
  const std::string range = open_float ? "give a value >= " + detail::number_text(lo)
                                       : "give a value from " + detail::number_text(lo) + " to " + detail::number_text(hi);
  if constexpr (std::is_integral<T>::value) {
    // Integers: any decimal outside [lo, hi] is "out of range" with the range, however large or
    // negative; nothing is clamped or wrapped (strtoull takes "-1" for an unsigned and wraps it).
    const detail::DecimalInteger d = detail::classify_decimal(text);
    if (d.decimal) return detail::decimal_in_range<T>(text, d.negative, lo, hi) ? "" : text + " is out of range: " + range;
    if (std::is_unsigned<T>::value && text.find('-') != std::string::npos) return text + " is out of range: " + range;
  }
  T v{};
  if (!CLI::detail::lexical_cast(text, v))
    return "'" + text + "' is not " + (std::is_integral<T>::value ? "an integer" : "a number");
  if constexpr (std::is_floating_point<T>::value) {
    if (!(v == v)) return "'" + text + "' is not a number";
  }
  if (v >= lo && v <= hi) return "";
  return text + " is out of range: " + range;
}

template <class T>
CLI::Option* add_number(CLI::App& cmd, const std::string& name, T& value, const std::string& help, T lo, T hi) {
  CLI::Option* o = cmd.add_option(name, value, help)->capture_default_str();
  o->check(CLI::Validator([lo, hi](std::string& s) { return range_problem<T>(s, lo, hi); }, "", "range"));
  return o;
}

template <class T>
CLI::Option* add_number_list(CLI::App& cmd, const std::string& name, std::vector<T>& values, const std::string& help, T lo, T hi) {
  CLI::Option* o = cmd.add_option(name, values, help)->delimiter(',')->default_str(detail::joined(values));
  o->check(CLI::Validator([lo, hi](std::string& s) { return range_problem<T>(s, lo, hi); }, "", "range"));
  return o;
}

template <class T>
void check_range_first(CLI::App& cmd, const std::string& name, T lo, T hi) {
  // transform() puts a validator before the others; this one changes nothing, it only refuses.
  cmd.get_option(name)->transform(CLI::Validator([lo, hi](std::string& s) { return range_problem<T>(s, lo, hi); }, "", "range"));
}

}  // namespace hipstudio::app
