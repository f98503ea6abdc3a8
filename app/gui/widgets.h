#pragma once
// Small drawing helpers shared by panels: plots on an ImDrawList (there is no ImPlot in Debian's
// ImGui), a greyed scope for stale results, labelled values and the legend swatch.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/gui/theme.h"

namespace hipstudio::gui {

// Data -> screen mapping of one plot area, with axes, ticks and labels drawn by begin_plot.
struct PlotArea {
  ImVec2 min, max;         // inner rectangle (pixels)
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_x = false;
  ImVec2 at(double x, double y) const;
  double x_of(float px) const;   // inverse of at() along x
  bool hovered = false;
  ImVec2 mouse;
};

// Reserves `size` (pixels), draws background, grid, ticks and axis labels; clips to the inner
// area until end_plot.
PlotArea begin_plot(const char* id, ImVec2 size, double x0, double x1, double y0, double y1, const char* x_label,
                    const char* y_label, const Theme& theme, bool log_x = false);
void end_plot();
void plot_line(const PlotArea& p, const std::vector<double>& xs, const std::vector<double>& ys, uint32_t color,
               float thickness = 2.0f);
void plot_points(const PlotArea& p, const std::vector<double>& xs, const std::vector<double>& ys, uint32_t color,
                 float radius = 3.0f);
// Bars over [edges[i], edges[i+1]) with heights ys[i].
void plot_bars(const PlotArea& p, const std::vector<double>& edges, const std::vector<double>& ys, uint32_t color);
// Toolbars that fit any width: before an item of `width` pixels placed with SameLine, moves to a
// new line when it would not fit.
void wrap_if_needed(float width);
float checkbox_width(const char* label);
// A legend entry: coloured square then text, on the current line (wraps when full).
void legend_item(uint32_t color, const char* label);

// A tooltip for the item just drawn, placed right of the current window (the sidebar) at the
// item's height, so it never covers the controls below it. printf-style.
void side_tooltip(const char* format, ...);

// Greys everything drawn in its scope when `stale` (the result belongs to older inputs).
class StaleScope {
 public:
  explicit StaleScope(bool stale);
  ~StaleScope();
  StaleScope(const StaleScope&) = delete;
  StaleScope& operator=(const StaleScope&) = delete;

 private:
  bool stale_;
};

// A wrapped line in the theme's warning colour (a stale view's reason, a refusal).
void warn_text(const std::string& text, const Theme& theme);

// "No result yet" text centred in the remaining space, with a reason.
void empty_state(const char* message, const Theme& theme);

// Vertical splitter between two areas: returns true while dragged, moving `position` (pixels).
bool vertical_splitter(const char* id, float* position, float min_pos, float max_pos, float height);

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Tokens laid out as wrapped text, each on its own background (BertViz style), drawn under a
// clipper: the layout (each token's line and x) is computed once per (source, count, width, font)
// and a frame draws only the lines inside the window's clip rectangle, so a 128k-token prompt puts
// no more vertices on screen than a short one (ImGui 1.86 indexes a draw list with 16 bits: more
// than 65,535 vertices in one window abort the app). A token never breaks across lines; one wider
// than the column sits alone on its line.
// `label(i)` is the shown text, `background(i)` its colour (0: none), `outline` a token framed in
// the accent colour. draw() returns the token under the mouse (-1 none); `clicked` is set when it
// was clicked.
struct TokenFlow {
  int64_t hovered = -1;
  bool clicked = false;
};
class TokenFlowView {
 public:
  // `source` identifies the labels (e.g. the token vector's data): a new source lays out again.
  TokenFlow draw(const void* source, int64_t count, const std::function<std::string(int64_t)>& label,
                 const std::function<uint32_t(int64_t)>& background, int64_t outline, const Theme& theme,
                 const std::function<uint32_t(int64_t)>& text_color = nullptr);
  // Lines drawn by the last draw() (the self-test checks the clipping with it).
  int64_t lines_drawn() const { return lines_drawn_; }

 private:
  const void* source_ = nullptr;
  int64_t count_ = -1;
  float width_ = -1, font_ = -1;
  std::vector<float> x_, w_;        // (count) each token's x offset and width in pixels
  std::vector<int32_t> line_;       // (count) each token's line, ascending
  std::vector<int64_t> line_start_; // (lines + 1) first token of each line, then count
  int64_t lines_drawn_ = 0;
};

// Long text (a whole prompt, a generation) wrapped to the available width and drawn one line per
// clipper row: ImGui's own wrapped text emits a quad for every glyph of the text, visible or not,
// which a 40 KB prompt takes past one draw list's 16-bit vertex indices. The line breaks are kept
// until the text, the width or the font changes.
class WrappedText {
 public:
  void draw(const std::string& text);
  int64_t lines() const { return static_cast<int64_t>(lines_.size()); }

 private:
  std::string text_;
  float width_ = -1, font_ = -1;
  std::vector<std::pair<size_t, size_t>> lines_;  // [begin, end) byte ranges of text_
};

// Sizes and places the next window inside the main viewport's work area (the screen minus the
// menu bar): at most `size` and never larger than the work area, centred on `cond`, and kept
// resizable only within it, so a title bar (and its close button) is always on screen.
void fit_next_window(ImVec2 size, ImGuiCond cond = ImGuiCond_Appearing);
// Inside a window (after Begin): moves it back inside the work area when it got out (the app's
// window shrank, or a drag took the title bar off screen) and shrinks it to fit.
void keep_window_inside_viewport();
// The part of rectangle [min, max) outside the main viewport's work area, in pixels (0: inside).
float outside_viewport(ImVec2 min, ImVec2 max);

// Visible text of a token: newlines as "\n", so the flow stays readable.
std::string token_text(const std::string& piece);

// A vertical colour bar of `kind` from lo (bottom) to hi (top), log scale, ticked at powers of ten.
void colorbar_log(const char* id, float width, float height, double lo, double hi, const char* label, const Theme& theme);

}  // namespace hipstudio::gui
