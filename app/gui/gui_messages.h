#pragma once
// What the GUI says when it refuses an input or shows an old result, in the GUI's words: the
// controls a user can reach (the prompt box, "new tokens", "decode", Load), never the command
// line's flags. Torch-free, so tests/gui checks the wording and the worker and panels share it.
#include <cstdint>
#include <string>

#include "app/gui/app_state.h"
#include "app/gui/results.h"

namespace hipstudio::gui {

// The paired analysis refused before it runs: an empty prompt, a single token, or more tokens
// than `context` holds with `decode_steps` decode steps after them (the analysis decodes them).
std::string empty_prompt_message();
std::string single_token_message();
std::string prompt_too_long_message(int64_t tokens, int64_t context, int64_t decode_steps, const std::string& model);
// Generate refused: the prompt and the new tokens pass the context.
std::string generate_too_long_message(int64_t tokens, int64_t new_tokens, int64_t context);
// Load refused: nothing at `path`.
std::string model_not_found_message(const std::string& path);
// A folder given where a prompt file was asked for.
std::string prompt_is_folder_message(const std::string& path);

// An error raised below the GUI (engine, formats) with its command-line advice ("--prompt TEXT",
// "raise --context", "--tokenizer PATH") replaced by the GUI's way to the same fix. Messages
// without such advice pass unchanged.
std::string in_gui_words(const std::string& error);

// Why a view's result is not the sidebar's, or "" when it is: the refused settings' rule, then
// "(updating)" only while the worker runs, else the failure that keeps it old (the analysis of a
// refused prompt, a model that did not load, a cancel), so nothing reads "(updating)" while idle.
std::string stale_reason(const AppState& s, const Snapshot& snap, int stage);

}  // namespace hipstudio::gui
