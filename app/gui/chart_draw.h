#pragma once
// The ImGui drawer of viz/chart.h's charts: each plot through begin_plot (widgets.h: background,
// grid, ticks and axis labels by viz's rule), its series, then the chart's legend (chart_legend),
// in the figure style of the UI's theme (dark: viz::dark_style, light: viz::paper_style), so a
// panel shows the chart the SVG export writes, in the same colours where the styles match.
#include <string>

#include <imgui.h>

#include "app/gui/theme.h"
#include "viz/chart.h"
#include "viz/figure.h"

namespace hipstudio::gui {

// The figure style whose colours the UI's theme shows.
viz::FigureStyle theme_figure_style(const Theme& theme);

// Draws the plots side by side in `size` (pixels; the legend goes on the lines below). `id`
// makes the plots' ImGui ids unique in the window.
void draw_chart(const char* id, const viz::Chart& chart, ImVec2 size, const Theme& theme);

}  // namespace hipstudio::gui
