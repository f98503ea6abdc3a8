#pragma once
// Typed reads of config.json values with messages that name the key and the file (shared by the
// config parser's pieces). `where` is the key's path for messages, e.g. "rope_parameters.factor".
#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"

namespace hipstudio::config_json {

using nlohmann::json;

inline bool has(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

inline int64_t integer(const json& j, const char* key, int64_t fallback, const std::string& source,
                       const std::string& where = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  // 4096.0 is an integer written by a float-minded tool; 4096.5 is not.
  if (it->is_number_float() && std::isfinite(it->get<double>()) && std::floor(it->get<double>()) == it->get<double>() &&
      std::fabs(it->get<double>()) < 9e15)
    return static_cast<int64_t>(it->get<double>());
  if (!it->is_number_integer())
    throw InputError(source + ": key '" + (where.empty() ? key : where) + "' must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

inline int64_t required_integer(const json& j, const char* key, const std::string& source) {
  if (!has(j, key))
    throw InputError(source + ": missing key '" + key + "' (config.json of this architecture needs it)");
  return integer(j, key, 0, source);
}

inline double number(const json& j, const char* key, double fallback, const std::string& source,
                     const std::string& where = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  const std::string name = where.empty() ? key : where;
  if (!it->is_number()) throw InputError(source + ": key '" + name + "' must be a number, got " + it->dump());
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw InputError(source + ": key '" + name + "' must be a finite number, got " + it->dump());
  return v;
}

inline bool boolean(const json& j, const char* key, bool fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw InputError(source + ": key '" + key + "' must be true or false, got " + it->dump());
  return it->get<bool>();
}

inline std::string text(const json& j, const char* key, const std::string& fallback, const std::string& source,
                        const std::string& where = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string())
    throw InputError(source + ": key '" + (where.empty() ? key : where) + "' must be a string, got " + it->dump());
  return it->get<std::string>();
}

}  // namespace hipstudio::config_json
