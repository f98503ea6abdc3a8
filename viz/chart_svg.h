#pragma once
// The SVG writer of viz/chart.h's charts: a standalone <svg> document (valid XML, text escaped)
// with the style's background, the title and up to two lines of `context` under it, each plot's
// axes, ticks (viz::nice_ticks / log_ticks / tick_label: the screen's rule), grid and series, and
// the chart's legend right of the last plot. Every colour is the style's.
#include <string>

#include "viz/chart.h"
#include "viz/figure.h"

namespace hipstudio::viz {

std::string svg_chart(const Chart& chart, const FigureStyle& style, const std::string& context = "");

// A series' colour in `style` (packed as pack_rgba8): its fixed_color, else the style's series
// colour of its index, or the text colour for index -1. The ImGui drawer paints with it too.
uint32_t chart_color(const FigureStyle& style, int index, uint32_t fixed_color = 0);

// Text escaped for XML 1.0 (markup characters as entities, control characters as spaces).
std::string xml_escape(const std::string& text);

}  // namespace hipstudio::viz
