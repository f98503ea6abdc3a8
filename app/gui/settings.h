#pragma once
// Persistence of what a user expects to find again: window geometry, theme, scale, layout, recent
// files, the last model / device / prompt and knobs. A small JSON file beside imgui.ini in
// ${XDG_CONFIG_HOME:-~/.config}/hipstudio/. Unreadable settings are ignored, never fatal.
#include <memory>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/panel.h"

namespace hipstudio::gui {

struct WindowGeometry {
  int width = 1600, height = 1000;
  int x = -1, y = -1;  // -1: let the window manager place it
};

std::string config_dir();  // created on save
// Only PersistedSettings cross the file: the selection and transient state start fresh.
void load_settings(const std::string& path, PersistedSettings& s, std::vector<std::unique_ptr<Panel>>& panels, WindowGeometry& g);
void save_settings(const std::string& path, const PersistedSettings& s, const std::vector<std::unique_ptr<Panel>>& panels,
                   const WindowGeometry& g);
// save_settings in two halves: the file's text, and writing it (atomically: a temporary file
// renamed over the old one, so a crash mid-write leaves the old settings).
std::string settings_text(const PersistedSettings& s, const std::vector<std::unique_ptr<Panel>>& panels, const WindowGeometry& g);
void write_settings_text(const std::string& path, const std::string& text);

}  // namespace hipstudio::gui
