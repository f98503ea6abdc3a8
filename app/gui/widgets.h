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

// "No result yet" text centred in the remaining space, with a reason.
void empty_state(const char* message, const Theme& theme);

// Vertical splitter between two areas: returns true while dragged, moving `position` (pixels).
bool vertical_splitter(const char* id, float* position, float min_pos, float max_pos, float height);

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Tokens laid out as wrapped text, each on its own background (BertViz style). `label(i)` is the
// shown text, `background(i)` its colour (0: none), `outline` a token framed in the accent colour.
// Returns the token under the mouse (-1 none); `clicked` is set when it was clicked.
struct TokenFlow {
  int64_t hovered = -1;
  bool clicked = false;
};
TokenFlow token_flow(int64_t count, const std::function<std::string(int64_t)>& label, const std::function<uint32_t(int64_t)>& background,
                     int64_t outline, const Theme& theme, const std::function<uint32_t(int64_t)>& text_color = nullptr);
// Visible text of a token: newlines as "\n", so the flow stays readable.
std::string token_text(const std::string& piece);

// A vertical colour bar of `kind` from lo (bottom) to hi (top), log scale, ticked at powers of ten.
void colorbar_log(const char* id, float width, float height, double lo, double hi, const char* label, const Theme& theme);

}  // namespace hipstudio::gui
