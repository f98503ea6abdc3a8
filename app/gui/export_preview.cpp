#include "app/gui/export_preview.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <memory>

#include <imgui.h>

#include "app/gui/texture.h"
#include "app/gui/widgets.h"
#include "viz/colormap.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace hipstudio::gui {

DecodedPng decode_png_file(const std::string& path) {
  DecodedPng out;
  int n = 0;
  unsigned char* px = stbi_load(path.c_str(), &out.width, &out.height, &n, 4);
  if (!px) {
    out.error = std::string("cannot decode ") + path + ": " + stbi_failure_reason();
    return out;
  }
  out.rgba.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height));
  for (size_t i = 0; i < out.rgba.size(); ++i) out.rgba[i] = viz::pack_rgba8(px[i * 4], px[i * 4 + 1], px[i * 4 + 2], 255);
  stbi_image_free(px);
  return out;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

void draw_export_preview(PanelContext& ctx) {
  AppState& s = ctx.state;
  static std::string loaded;
  static std::unique_ptr<GlTexture> tex;
  static DecodedPng png;
  if (s.preview_path.empty()) {  // closed: the texture goes while the GL context is current
    tex.reset();
    loaded.clear();
    return;
  }
  if (loaded != s.preview_path) {
    png = decode_png_file(s.preview_path);
    tex = std::make_unique<GlTexture>();
    if (png.error.empty()) tex->upload(png.rgba.data(), png.width, png.height);
    loaded = s.preview_path;
  }
  const float pad = ImGui::GetStyle().WindowPadding.x * 2;
  // The figure 1:1 where the screen has room, else a window the size of the screen that scrolls
  // (a 1024 px figure on a 1000 px screen): the title bar and its close button stay on screen.
  // At least wide enough for its title and path line (a small figure's window stays usable).
  fit_next_window(ImVec2(std::max(static_cast<float>(png.width) + pad, ImGui::GetFontSize() * 28),
                         static_cast<float>(png.height) + ImGui::GetFrameHeightWithSpacing() * 3));
  bool open = true;
  if (ImGui::Begin("Exported figure", &open, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_HorizontalScrollbar)) {
    keep_window_inside_viewport();
    ImGui::TextDisabled("%s (%d x %d px, read back from the file)", s.preview_path.c_str(), png.width, png.height);
    // The clipboard (GLFW's) holds text only: the figure's SVG document, which vector editors,
    // browsers and slide tools paste as a picture, or the PNG's path.
    const std::string svg_path = s.preview_path.substr(0, s.preview_path.size() - 4) + ".svg";
    if (ImGui::SmallButton("Copy SVG")) {
      const std::string svg = read_text_file(svg_path);
      if (svg.empty()) {
        s.status_message = "cannot copy the figure: " + svg_path + " is missing or empty";
      } else {
        ImGui::SetClipboardText(svg.c_str());
        s.status_message = "copied the figure's SVG (" + std::to_string(svg.size()) + " bytes of text, from " + svg_path + ") to the clipboard";
      }
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Copies the SVG document of this figure as text (paste it into Inkscape, a browser or slides).");
    ImGui::SameLine();
    if (ImGui::SmallButton("Copy PNG path")) {
      ImGui::SetClipboardText(s.preview_path.c_str());
      s.status_message = "copied " + s.preview_path + " to the clipboard";
    }
    if (!png.error.empty()) {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ctx.theme.bad), "%s", png.error.c_str());
    } else {
      ImGui::Image(tex->id(), ImVec2(static_cast<float>(png.width), static_cast<float>(png.height)));  // 1:1, no resampling
    }
  }
  ImGui::End();
  if (!open) s.preview_path.clear();
}

}  // namespace hipstudio::gui
