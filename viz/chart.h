#pragma once
// One chart description that every renderer draws: the GUI's ImGui drawer (app/gui/chart_draw.h)
// and the SVG writer (viz/chart_svg.h), so a panel's plot and its exported figure are the same
// chart. A chart is plain data: plots side by side, each with its axes and series; colours are
// indices into a FigureStyle's series palette, so each renderer paints them in its style. The
// legend is derived from the series (chart_legend), so it lists exactly what is drawn.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hipstudio::viz {

enum class ChartMark { Line, Points, Bars };

struct ChartSeries {
  std::string name;                 // its legend entry; "" draws it without one
  ChartMark mark = ChartMark::Line;
  std::vector<double> x, y;         // same length; Bars: centres and heights. Non-finite points are skipped
  std::vector<double> base;         // Bars: each bar's bottom (empty: 0), for stacked bars
  double bar_width = 1;             // Bars: width in x units
  int color = 0;                    // the style's series_color(color); -1: the style's text colour
  uint32_t fixed_color = 0;         // nonzero (pack_rgba8): this colour in every style, for series whose
                                    // colour carries a meaning of its own (the sweep's method colours)
  bool dashed = false;              // Line: dashed (its markers are rings, so a solid series under it shows)
  bool markers = false;             // Line: a dot at each point
  bool bridge_gaps = false;         // Line: join the finite points across non-finite ones (else a gap breaks it)
  float width = 1.6f;               // Line: stroke width; Points: radius (px at 1x)
  float opacity = 1;                // Bars: fill opacity
  std::string svg_class;            // an extra class name in SVG ("normal-fit"), for readers of the file
  std::vector<std::string> tips;    // Bars: a hover text per bar (SVG <title>); empty: none
};

struct ChartAxis {
  std::string label;
  bool log2 = false;                    // a logarithmic axis (x only), ticked at the powers of ten
  double lo = NAN, hi = NAN;            // a fixed range where given (NaN: from the data)
  std::vector<std::string> categories;  // category labels at x = 0, 1, ... instead of numeric ticks
};

struct ChartText {
  double x = 0, y = 0;  // data units; the text's baseline centre sits 4 px above (x, y)
  std::string text;
};

struct ChartPlot {
  ChartAxis x, y;
  std::vector<ChartSeries> series;     // drawn in order, later over earlier
  std::vector<ChartText> texts;        // labels in the plot (a stacked bar's total)
  std::vector<std::string> notes;      // text-only legend lines after the series' ("KL 0.031")
};

struct Chart {
  std::string title;
  std::vector<ChartPlot> plots;  // side by side, left to right
};

// The data range a plot shows (x in log2 units on a log axis): the series' finite points (bars
// with their bases and widths), a fixed lo / hi where the axis has one, y padded by 5% where not
// fixed, an empty or flat range widened. Both renderers frame a plot with it.
struct ChartRange {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
};
ChartRange chart_range(const ChartPlot& plot);

// The legend: one entry per named series of every plot, in drawing order (a name and colour met
// again is listed once), then each plot's notes.
struct ChartLegendEntry {
  std::string name;
  ChartMark mark = ChartMark::Line;
  int color = 0;
  uint32_t fixed_color = 0;
  bool dashed = false, markers = false;
  bool note = false;  // a text line without a sample
};
std::vector<ChartLegendEntry> chart_legend(const Chart& chart);

}  // namespace hipstudio::viz
