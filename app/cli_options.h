#pragma once
// The command line's one option layer. Every numeric option is added through add_number /
// add_number_list with its valid range, every closed set through add_choice, so each bad value is
// refused while parsing (before any file is read or model loaded) with a message that names the
// option, what was given and what is accepted. Lists are comma-separated and show their defaults so.
//
// One rule per kind of value; nothing is clamped, wrapped or ignored without a word:
//   - a number outside its option's fixed range is refused while parsing, with the range:
//     "--seed: 18446744073709551616 is out of range: give a value from 0 to 18446744073709551615".
//     Decimals are compared exactly, however long: no saturating (2^64 is not 2^64 - 1), no wrapping
//     (-1 is not 2^64 - 1 for a seed), no "is not an integer" for a number that is one.
//   - a number whose range depends on the model or on other options (--ld against the model's layers,
//     token counts against the context, bench mask sizes against k) is refused by the command before
//     the work, once the config is read, with the range that holds for this model.
//   - thread counts (--threads): 0 (every core) to max_threads(), 4x the hardware threads (1024 at most).
//   - a default that does not fit the model (bench model's --tokens on a short context) is adjusted,
//     and the value used is stated on stderr ("note: ..."); a value the user gave is never adjusted.
//   - an option given twice is refused ("option --x given more than once"), except the repeatable
//     ones whose help says so (--trace).
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

// The top of every --threads range: 4 x the hardware threads (at least 4), at most 1024. More
// threads than that only contend (a 2-core machine took 126 s to start 4096 of them).
int max_threads();

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
