#pragma once
// --methods and every selection method's parameters as command-line options, all read from the
// registry (kernels/methods/selection_method.h): one flag per MethodParam (method_param_flag,
// "--quest-page"), its range checked while parsing, its default and help from the registry. No
// command writes per-method option code; a method added to the registry gets its flags here.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/hip_params.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::app {

struct ChosenMethod {
  const hip::methods::SelectionMethod* method = nullptr;
  hip::methods::MethodValues values;  // resolved: every parameter of the method
};

class MethodOptions {
 public:
  // Adds --methods (default `default_methods`) and the flags of every registry parameter to `cmd`,
  // except those of the methods in `own_options`, whose values the command sets from options it
  // had before the registry (mask: random's seed is --seed); they resolve to their defaults here.
  // `*this` must outlive the parse (commands keep it in their shared argument struct).
  void add_options(CLI::App& cmd, const std::string& default_methods,
                   const std::vector<std::string>& own_options = {});
  // The listed methods with their values, after HiP's params are known. InputError (exit 2, before
  // any work) for an unknown, empty or repeated name (naming the valid ones), a value breaking a
  // method's rule, or a flag of a method --methods does not list.
  std::vector<ChosenMethod> resolve(const hip::HipParams& p) const;
  const std::string& methods_text() const { return methods_; }

 private:
  struct Given {
    const hip::methods::SelectionMethod* method = nullptr;
    const hip::methods::MethodParam* param = nullptr;
    CLI::Option* option = nullptr;
    double real = 0.0;
    int64_t integer = 0;
  };
  std::string methods_;
  std::map<std::string, Given> params_;  // by flag; std::map keeps each value's address for CLI11
};

}  // namespace hipstudio::app
