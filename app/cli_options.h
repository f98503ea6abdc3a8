#pragma once
// The command line's one option layer. Every numeric option is added through add_number /
// add_number_list with its valid range, every closed set through add_choice, so each bad value is
// refused while parsing (before any file is read or model loaded) with a message that names the
// option, what was given and what is accepted. Lists are comma-separated and show their defaults so.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/common/model_options.h"

namespace hipstudio::app {

// "" when `text` parses as a T within [lo, hi]; else why not (without the option's name: CLI11
// prefixes it).
template <class T>
std::string range_problem(const std::string& text, T lo, T hi);

template <class T>
CLI::Option* add_number(CLI::App& cmd, const std::string& name, T& value, const std::string& help, T lo,
                        T hi = std::numeric_limits<T>::max());

template <class T>
CLI::Option* add_number_list(CLI::App& cmd, const std::string& name, std::vector<T>& values, const std::string& help, T lo,
                             T hi = std::numeric_limits<T>::max());

// For a numeric option added elsewhere (the GUI's root options): the same range check, run before its
// own validators, so a bad value gets this layer's message.
template <class T>
void check_range_first(CLI::App& cmd, const std::string& name, T lo, T hi);

CLI::Option* add_choice(CLI::App& cmd, const std::string& name, std::string& value, const std::string& help,
                        const std::vector<std::string>& choices);
CLI::Option* add_choice_list(CLI::App& cmd, const std::string& name, std::vector<std::string>& values,
                             const std::string& help, const std::vector<std::string>& choices);

// --model --tokenizer --device --dtype --threads --context, as every model command spells them.
void add_model_options(CLI::App& cmd, ModelOptions& options);

// Upper bound of --batch (generate, bench model: sequences decoded together). The memory plan refuses
// a batch whose KV caches do not fit; this bound only keeps the number sane (far past the batch at
// which a decode step stops being bound by reading the weights).
inline constexpr int64_t kMaxBatch = 256;

// --quiet: no progress lines on stderr.
CLI::Option* add_quiet_flag(CLI::App& cmd, bool& quiet);

// "TEXT" -> TEXT; "@FILE" -> the file's contents (InputError if unreadable); "@@x" -> "@x". An empty
// result is an InputError naming `option_name` and how to pass text.
std::string read_text_argument(const std::string& value, const std::string& option_name);

}  // namespace hipstudio::app

#include "app/cli_options_impl.h"
