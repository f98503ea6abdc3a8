#pragma once
// Opening files the user names or drops on the window.
#include <string>

#include "app/gui/app_state.h"

namespace hipstudio::gui {

// Reads a prompt file into the state (and the recent list); sets status_message on failure.
bool open_prompt_file(AppState& s, const std::string& path);

// Shows a capture file read-only instead of the live run (capture_view.h). A damaged or unreadable
// file leaves the state as it was and puts the reader's error in status_message; returns success.
bool open_capture_file(AppState& s, const std::string& path);
// Capture B of a comparison beside what is on screen (the Compare captures panel): fails as
// open_capture_file does, leaving any earlier B in place.
bool open_compare_file(AppState& s, const std::string& path);
// Back to the live run (File > Close capture): the sliders' parameters apply again.
void close_capture(AppState& s);

// A dropped path: a .hipcap file opens as a capture, a directory or a model-looking file becomes
// the model, anything else the prompt.
void handle_dropped_path(AppState& s, const std::string& path);

}  // namespace hipstudio::gui
