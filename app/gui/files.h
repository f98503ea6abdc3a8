#pragma once
// Opening files the user names or drops on the window.
#include <string>

#include "app/gui/app_state.h"

namespace hipstudio::gui {

// Reads a prompt file into the state (and the recent list); sets status_message on failure.
bool open_prompt_file(AppState& s, const std::string& path);

// A dropped path: a directory or a model-looking file becomes the model, anything else the prompt.
void handle_dropped_path(AppState& s, const std::string& path);

}  // namespace hipstudio::gui
