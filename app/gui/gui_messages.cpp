#include "app/gui/gui_messages.h"

#include <utility>
#include <vector>

namespace hipstudio::gui {

namespace {

// 10365 -> "10,365": prompt lengths are read at a glance.
std::string count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

std::string empty_prompt_message() {
  return "The prompt is empty: type some text (Edit prompt), open a text file, or drop one on the window.";
}

std::string single_token_message() {
  return "The prompt is a single token: the analysis compares attention over two or more, so type a longer prompt.";
}

std::string prompt_too_long_message(int64_t tokens, int64_t context, int64_t decode_steps, const std::string& model) {
  const int64_t room = context - decode_steps;
  std::string m = "The prompt has " + count(tokens) + " tokens; " + (model.empty() ? std::string("the model") : model) +
                  " reads at most " + count(context) + " (its context)";
  if (decode_steps > 0) m += " and the analysis decodes " + count(decode_steps) + " steps after the prompt";
  m += ", so at most " + count(room > 0 ? room : 0) + " prompt tokens fit. Shorten the prompt or open a shorter file";
  if (decode_steps > 0) m += ", lower 'decode' in HiP parameters";
  return m + ", or load a model with a longer context.";
}

std::string generate_too_long_message(int64_t tokens, int64_t new_tokens, int64_t context) {
  if (tokens >= context)
    return "The prompt has " + count(tokens) + " tokens and the model's context is " + count(context) +
           ": no room is left to generate. Shorten the prompt, or load a model with a longer context.";
  return "The prompt has " + count(tokens) + " tokens and " + count(new_tokens) + " new ones are asked for, " +
         "but the model's context is " + count(context) + " tokens: set 'new tokens' to " + count(context - tokens) +
         " or fewer, or shorten the prompt.";
}

std::string model_not_found_message(const std::string& path) {
  return "No model at '" + path + "': type the path of a llama2.c .bin file or of a Hugging Face model folder, "
         "or empty the box for the default stories15M, then press Load.";
}

std::string prompt_is_folder_message(const std::string& path) {
  return "cannot open " + path + ": it is a folder; give a text file (a folder holds models: type it in the model box)";
}

std::string in_gui_words(const std::string& error) {
  // Longest phrases first: a shorter one is part of a longer one.
  static const std::vector<std::pair<std::string, std::string>> phrases{
      {"pass some text with --prompt TEXT or --prompt @FILE", "type some text (Edit prompt) or open a text file"},
      {"shorten the prompt, lower --max-tokens, or raise --context (quality past the trained context is not guaranteed)",
       "shorten the prompt, lower 'new tokens' or 'decode', or load a model with a longer context"},
      {", or raise --context (quality past the trained context is not guaranteed)", ", or load a model with a longer context"},
      {"raise --context", "load a model with a longer context"},
      {"lower --max-tokens", "lower 'new tokens' or 'decode'"},
      {"copy it there or pass --tokenizer PATH", "copy it into the model folder"},
      {"(pass a llama2.c .bin file or a Hugging Face directory)",
       "(type the path of a llama2.c .bin file or of a Hugging Face model folder, or empty the box for the default model)"},
      {"--max-tokens", "'new tokens'"},
      {"--device cuda", "the cuda device"},
      {"--device cpu", "the cpu device"},
  };
  std::string out = error;
  for (const auto& [cli, gui] : phrases)
    for (size_t at = out.find(cli); at != std::string::npos; at = out.find(cli, at + gui.size())) out.replace(at, cli.size(), gui);
  return out;
}

std::string stale_reason(const AppState& s, const Snapshot& snap, int stage) {
  if (!s.capture && !s.invalid.empty())
    return "Not the sidebar's settings (refused: " + s.invalid + "); showing the last valid ones.";
  if (stage < 0 || stage >= kStageCount || !snap.stale[static_cast<size_t>(stage)]) return "";
  if (snap.busy) return "(updating)";
  // Idle and old: the first failure on the way to this view says why (the model, then the prompt's
  // analysis, then the view's own stage).
  for (int st : {static_cast<int>(kStageModel), static_cast<int>(kStageAnalysis), stage}) {
    const std::string& e = snap.error[static_cast<size_t>(st)];
    if (e.empty()) continue;
    if (e == "cancelled")
      return "Cancelled: this is the previous result. Change a setting (or press Load) to compute it again.";
    const char* what = st == kStageModel ? "the model did not load" : st == kStageAnalysis ? "the prompt was refused or its analysis failed"
                                                                                           : "this view failed";
    return std::string("Not the current input's result: ") + what + " (the sidebar and the status line say why); showing the previous result.";
  }
  return "Not computed for the current input; showing the previous result.";
}

}  // namespace hipstudio::gui
