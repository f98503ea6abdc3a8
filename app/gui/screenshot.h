#pragma once
#include <string>

namespace hipstudio::gui {

// Reads the current framebuffer (width x height, after rendering, before the swap) into a PNG.
// Returns "" or what went wrong.
std::string save_screenshot(const std::string& path, int width, int height);

}  // namespace hipstudio::gui
