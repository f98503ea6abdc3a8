#include "app/gui/theme.h"

#include <sys/stat.h>

#include <imgui.h>

namespace hipstudio::gui {

namespace {
bool file_exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}
}  // namespace

Theme apply_theme(bool dark, float scale, viz::MaskColors colors) {
  ImGuiStyle style;  // fresh defaults, then scaled once
  if (dark) {
    ImGui::StyleColorsDark(&style);
  } else {
    ImGui::StyleColorsLight(&style);
  }
  style.WindowRounding = 0;
  style.FrameRounding = 3;
  style.GrabRounding = 3;
  style.TabRounding = 3;
  style.WindowBorderSize = 0;
  style.ChildBorderSize = 1;
  style.FramePadding = ImVec2(6, 3);
  style.ItemSpacing = ImVec2(8, 5);
  if (dark) {
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
    // Panes are outlined, not filled: with a software rasteriser (Mesa llvmpipe) every full-window
    // layer costs milliseconds, so the only full fill is glClear.
    style.Colors[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);
    style.Colors[ImGuiCol_MenuBarBg] = ImVec4(0.13f, 0.14f, 0.17f, 1.0f);
  } else {
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.96f, 0.96f, 0.97f, 1.0f);
    style.Colors[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);
    // ImGui's light frames are white on a near-white window: a grey fill and a border make every
    // slider, field and checkbox visible.
    style.Colors[ImGuiCol_FrameBg] = ImVec4(0.86f, 0.87f, 0.90f, 1.0f);
    style.Colors[ImGuiCol_FrameBgHovered] = ImVec4(0.80f, 0.84f, 0.92f, 1.0f);
    style.Colors[ImGuiCol_FrameBgActive] = ImVec4(0.74f, 0.80f, 0.92f, 1.0f);
    style.Colors[ImGuiCol_Border] = ImVec4(0.62f, 0.64f, 0.70f, 1.0f);
    style.FrameBorderSize = 1;
  }
  // A narrow grab, translucent, so that it never hides the slider's digits.
  style.GrabMinSize = 6;
  style.Colors[ImGuiCol_SliderGrab].w = 0.55f;
  style.Colors[ImGuiCol_SliderGrabActive].w = 0.75f;
  style.ScaleAllSizes(scale);
  ImGui::GetStyle() = style;

  Theme t;
  t.dark = dark;
  t.scale = scale;
  t.text_dim = dark ? IM_COL32(150, 155, 165, 255) : IM_COL32(100, 100, 110, 255);
  t.good = dark ? IM_COL32(110, 200, 120, 255) : IM_COL32(30, 140, 50, 255);
  t.bad = dark ? IM_COL32(240, 90, 90, 255) : IM_COL32(200, 40, 40, 255);
  t.warn = dark ? IM_COL32(240, 180, 70, 255) : IM_COL32(190, 120, 0, 255);
  t.accent = dark ? IM_COL32(90, 170, 250, 255) : IM_COL32(30, 110, 210, 255);
  t.hip = dark ? IM_COL32(250, 190, 60, 255) : IM_COL32(220, 140, 0, 255);
  t.dense = dark ? IM_COL32(90, 170, 250, 255) : IM_COL32(30, 110, 210, 255);
  t.plot_bg = dark ? IM_COL32(20, 22, 26, 255) : IM_COL32(252, 252, 253, 255);
  t.grid = dark ? IM_COL32(60, 64, 72, 255) : IM_COL32(215, 215, 220, 255);
  t.kept = dark ? IM_COL32(250, 214, 60, 255) : IM_COL32(232, 180, 0, 255);
  t.dropped = dark ? IM_COL32(70, 80, 95, 255) : IM_COL32(190, 195, 205, 255);
  t.repr = dark ? IM_COL32(255, 255, 255, 255) : IM_COL32(20, 20, 20, 255);
  t.mask = dark ? viz::dark_mask_palette(colors) : viz::light_mask_palette(colors);
  return t;
}

void load_fonts(float scale, Theme& theme) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  const float size = 15.0f * scale;
  if (file_exists(sans)) {
    io.Fonts->AddFontFromFileTTF(sans, size);
  } else {
    ImFontConfig cfg;
    cfg.SizePixels = 13.0f * scale;
    io.Fonts->AddFontDefault(&cfg);
  }
  theme.mono = file_exists(mono) ? io.Fonts->AddFontFromFileTTF(mono, size) : nullptr;
}

}  // namespace hipstudio::gui
