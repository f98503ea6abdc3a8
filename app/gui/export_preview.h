#pragma once
// After File > Export view... the exported mask figure opens in a window, decoded from the file
// written (what a paper gets, not a redraw): the check that the export is the view on screen.
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panel.h"

namespace hipstudio::gui {

// A PNG file as packed RGBA (pack_rgba8), or empty with `error` set.
struct DecodedPng {
  int width = 0, height = 0;
  std::vector<uint32_t> rgba;  // (height, width)
  std::string error;
};
DecodedPng decode_png_file(const std::string& path);

// A file's bytes; "" when it cannot be read.
std::string read_text_file(const std::string& path);

// The preview window of AppState::preview_path, with Copy SVG (the figure's SVG beside the PNG, as
// text: GLFW's clipboard holds text only) and Copy PNG path, while it is set (its close button clears it).
void draw_export_preview(PanelContext& ctx);

}  // namespace hipstudio::gui
