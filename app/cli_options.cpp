#include "app/cli_options.h"

#include <algorithm>
#include <fstream>
#include <thread>
#include <regex>
#include <sstream>

#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace {

std::string choice_list_text(const std::vector<std::string>& choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
  return s;
}

CLI::Validator one_of(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& s) -> std::string {
        for (const std::string& c : choices)
          if (s == c) return "";
        return "'" + s + "' is not one of " + choice_list_text(choices);
      },
      "", "choice");
}

}  // namespace

CLI::Option* add_choice(CLI::App& cmd, const std::string& name, std::string& value, const std::string& help,
                        const std::vector<std::string>& choices) {
  return cmd.add_option(name, value, help)->capture_default_str()->check(one_of(choices));
}

CLI::Option* add_choice_list(CLI::App& cmd, const std::string& name, std::vector<std::string>& values,
                             const std::string& help, const std::vector<std::string>& choices) {
  std::string defaults;
  for (size_t i = 0; i < values.size(); ++i) defaults += (i ? "," : "") + values[i];
  return cmd.add_option(name, values, help)->delimiter(',')->default_str(defaults)->check(one_of(choices));
}

int max_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::min<unsigned>(1024, std::max<unsigned>(4, 4 * cores)));
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--model", o.model, "llama2.c checkpoint file or Hugging Face model directory (default: stories15M from the cache)");
  cmd.add_option("--tokenizer", o.tokenizer,
                 "tokenizer file, tokenizer.bin or tokenizer.json whatever the model's format (default: the one beside the model)");
  cmd.add_option("--device", o.device, "cpu, cuda or cuda:N")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            static const std::regex ok("cpu|cuda(:[0-9]{1,3})?");
            return std::regex_match(s, ok) ? "" : "'" + s + "' is not a device: give cpu, cuda or cuda:N";
          },
          "", "device"));
  add_choice(cmd, "--dtype", o.dtype, "f32, bf16 or f16 (f16 only on cuda)", {"f32", "bf16", "f16"});
  add_number(cmd, "--threads", o.threads, "LibTorch intra-op threads (0 = all cores; 1 is fastest on the CPU: matrix products use every core through BLAS)", 0, max_threads());
  add_number<int64_t>(cmd, "--context", o.context, "maximum tokens per sequence (0 = the model's context length)", 0,
                      int64_t{1} << 31);
}

CLI::Option* add_quiet_flag(CLI::App& cmd, bool& quiet) {
  return cmd.add_flag("--quiet,-q", quiet, "no progress lines on stderr (results and errors still print)");
}

std::string read_text_argument(const std::string& value, const std::string& option_name) {
  std::string text, from;
  if (value.rfind("@@", 0) == 0) {
    text = value.substr(1);
  } else if (value.rfind('@', 0) != 0) {
    text = value;
  } else {
    const std::string path = value.substr(1);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw InputError(option_name + " @" + path + " is a folder: name a text file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(option_name + " @" + path + ": cannot open the file (check the path)");
    std::stringstream contents;
    contents << in.rdbuf();
    text = contents.str();
    from = " @" + path;
  }
  if (text.empty())
    throw InputError(option_name + from + " is empty: pass some text with " + option_name + " TEXT or " + option_name +
                     " @FILE");
  return text;
}

}  // namespace hipstudio::app
