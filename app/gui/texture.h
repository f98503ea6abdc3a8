#pragma once
// An OpenGL RGBA8 texture that ImGui can draw (ImTextureID is the GL name). Nearest filtering:
// one texel of a pooled image must stay a crisp cell when magnified.
#include <cstdint>

#include <imgui.h>

namespace hipstudio::gui {

// GL_MAX_TEXTURE_SIZE of the current context (asked once): the widest texture upload() takes.
int max_texture_size();

class GlTexture {
 public:
  GlTexture() = default;
  ~GlTexture();
  GlTexture(const GlTexture&) = delete;
  GlTexture& operator=(const GlTexture&) = delete;

  // rgba: (height, width) packed IM_COL32 values.
  void upload(const uint32_t* rgba, int width, int height);
  ImTextureID id() const { return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(name_)); }
  bool valid() const { return name_ != 0; }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  unsigned name_ = 0;
  int width_ = 0, height_ = 0;
};

}  // namespace hipstudio::gui
