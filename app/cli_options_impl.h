#pragma once
// Template definitions of app/cli_options.h (included at its end).
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
}  // namespace detail

template <class T>
std::string range_problem(const std::string& text, T lo, T hi) {
  T v{};
  // strtoull, under CLI11's cast, takes "-1" for an unsigned and wraps it around.
  const bool negative_unsigned = std::is_unsigned<T>::value && text.find('-') != std::string::npos;
  if (negative_unsigned || !CLI::detail::lexical_cast(text, v))
    return "'" + text + "' is not " + (std::is_integral<T>::value ? "an integer" : "a number");
  if constexpr (std::is_floating_point<T>::value) {
    if (!(v == v)) return "'" + text + "' is not a number";
  }
  if (v >= lo && v <= hi) return "";
  const bool open_top = hi == std::numeric_limits<T>::max();
  return text + " is out of range: give " +
         (open_top ? "a value >= " + detail::number_text(lo)
                   : "a value from " + detail::number_text(lo) + " to " + detail::number_text(hi));
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
