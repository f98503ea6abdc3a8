#include "app/method_options.h"

#include <algorithm>

#include "app/cli_options.h"
#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace m = hip::methods;

void MethodOptions::add_options(CLI::App& cmd, const std::string& default_methods,
                                const std::vector<std::string>& own_options) {
  methods_ = default_methods;
  cmd.add_option("--methods", methods_,
                 "selection methods, comma-separated (" + m::selection_method_list() + "); docs/METHODS.md")
      ->capture_default_str();
  for (const m::SelectionMethod* method : m::selection_methods()) {
    if (std::find(own_options.begin(), own_options.end(), method->name) != own_options.end()) continue;
    for (const m::MethodParam& param : method->params) {
      const std::string flag = m::method_param_flag(param);
      Given& g = params_[flag];
      g.method = method;
      g.param = &param;
      const std::string help = method->name + ": " + param.help;
      if (param.kind == m::MethodParamKind::kInteger) {
        g.integer = static_cast<int64_t>(param.fallback);
        g.option = add_number<int64_t>(cmd, flag, g.integer, help, static_cast<int64_t>(param.lo),
                                       static_cast<int64_t>(param.hi));
      } else {
        g.real = param.fallback;
        g.option = add_number<double>(cmd, flag, g.real, help, param.lo, param.hi);
      }
    }
  }
}

std::vector<ChosenMethod> MethodOptions::resolve(const hip::HipParams& p) const {
  std::vector<ChosenMethod> chosen;
  try {
    for (const m::SelectionMethod* method : m::parse_method_list(methods_)) chosen.push_back({method, {}});
  } catch (const m::MethodError& e) {
    throw InputError("--methods: " + std::string(e.what()));
  }
  for (const auto& [flag, g] : params_) {
    if (g.option->count() == 0) continue;
    bool listed = false;
    for (const ChosenMethod& c : chosen) listed = listed || c.method == g.method;
    if (!listed) {
      throw InputError(flag + " is a parameter of method " + g.method->name + ", which --methods (" + methods_ +
                       ") does not list: add " + g.method->name + " to --methods or drop " + flag);
    }
  }
  for (ChosenMethod& c : chosen) {
    m::MethodValues given;
    for (const auto& [flag, g] : params_) {
      if (g.method != c.method || g.option->count() == 0) continue;
      given[g.param->name] = g.param->kind == m::MethodParamKind::kInteger ? static_cast<double>(g.integer) : g.real;
    }
    try {
      c.values = m::resolve_values(*c.method, given, p);
    } catch (const m::MethodError& e) {
      std::string flags;
      for (const auto& [flag, g] : params_)
        if (g.method == c.method) flags += (flags.empty() ? "" : ", ") + flag;
      throw InputError(std::string(e.what()) + (flags.empty() ? "" : " (set with " + flags + ")"));
    }
  }
  return chosen;
}

}  // namespace hipstudio::app
