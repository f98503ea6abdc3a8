#include "app/gui/screenshot.h"

#include <vector>

#include <GL/gl.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace hipstudio::gui {

std::string save_screenshot(const std::string& path, int width, int height) {
  if (width <= 0 || height <= 0) return "empty framebuffer";
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;  // opaque
  stbi_flip_vertically_on_write(1);  // OpenGL's rows go bottom-up
  if (!stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4)) return "cannot write " + path;
  return "";
}

}  // namespace hipstudio::gui
