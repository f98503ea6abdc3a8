#pragma once
// The window layout without ImGui's docking branch: a menu bar, a resizable sidebar (model,
// prompt, parameters), two resizable panes of tabbed panels, and a status bar with the worker's
// progress and a cancel button.
#include <memory>
#include <string>
#include <vector>

#include "app/gui/panel.h"

namespace hipstudio::gui {

struct LayoutActions {
  bool quit = false;
  bool theme_changed = false;
  bool scale_changed = false;
  bool reset_settings = false;
  std::vector<std::string> drawn;  // ids of the panels drawn this frame
};

// frame_ms: the last frame drawn without waiting for input; idle: this frame waited for input (the
// status line then says the app is idle instead of showing the wait as a frame time).
LayoutActions draw_layout(PanelContext& ctx, std::vector<std::unique_ptr<Panel>>& panels, float frame_ms, bool idle);

// Keyboard shortcuts (shortcuts.cpp); also listed by draw_help.
void handle_shortcuts(PanelContext& ctx, LayoutActions& actions);
void draw_help(PanelContext& ctx, const std::vector<std::unique_ptr<Panel>>& panels);

}  // namespace hipstudio::gui
