// viz's chart model (viz/chart.h) drawn by its SVG writer: every series drawn in its style's colour,
// a legend that lists exactly the named series drawn (each with that colour) and the notes, the
// locality chart's legend against its series.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/captures/xml_check.h"
#include "viz/chart_svg.h"
#include "viz/locality_chart.h"

namespace hipstudio::viz {
namespace {

// (sample colour or "", text) of each legend line, top to bottom.
std::vector<std::pair<std::string, std::string>> legend_lines(const std::string& svg) {
  const size_t a = svg.find("<g class=\"legend\">"), b = svg.find("</g>", a);
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(svg.substr(a, b - a));
  std::string line;
  const std::regex colour("(?:fill|stroke)=\"(#[0-9a-f]{6})\""), text("<text[^>]*>([^<]*)</text>");
  while (std::getline(in, line)) {
    std::smatch t, c;
    if (!std::regex_search(line, t, text)) continue;
    const std::string sample = line.substr(0, static_cast<size_t>(t.position(0)));
    out.emplace_back(std::regex_search(sample, c, colour) ? c[1].str() : "", t[1].str());
  }
  return out;
}

ChartSeries make(const std::string& name, ChartMark mark, std::vector<double> x, std::vector<double> y) {
  ChartSeries s;
  s.name = name, s.mark = mark, s.x = std::move(x), s.y = std::move(y);
  return s;
}

Chart sample_chart() {
  Chart c;
  c.title = "two plots";
  ChartPlot a;
  a.x.label = "x";
  a.y.label = "y";
  ChartSeries bars = make("counts", ChartMark::Bars, {0, 1, 2}, {3, 5, 2});
  bars.bar_width = 1;
  ChartSeries line = make("fit", ChartMark::Line, {0, 1, 2}, {2.5, 5.5, 1.5});
  line.color = 1;
  ChartSeries unnamed = make("", ChartMark::Line, {0, 2}, {0, 0});  // a guide line: drawn, no legend entry
  unnamed.color = 3;
  a.series = {bars, line, unnamed};
  a.notes = {"KL 0.01"};
  ChartPlot b;
  b.x.label = "Delta";
  b.x.log2 = true;
  ChartSeries dashed = make("dashed", ChartMark::Line, {1, 2, 4, 8}, {1, NAN, 3, 4});
  dashed.color = 2, dashed.dashed = true, dashed.markers = true;
  ChartSeries again = make("fit", ChartMark::Line, {1, 8}, {1, 1});  // the same name and colour: listed once
  again.color = 1;
  ChartSeries point = make("chosen", ChartMark::Points, {4}, {3});
  point.color = -1;
  b.series = {dashed, again, point};
  c.plots = {a, b};
  return c;
}

TEST(ChartSvg, EverySeriesAndLegendEntryInTheStylesColours) {
  const Chart chart = sample_chart();
  const std::vector<ChartLegendEntry> legend = chart_legend(chart);
  ASSERT_EQ(legend.size(), 5u);  // counts, fit, dashed, chosen, then the note
  for (const FigureStyle& style : {paper_style(), dark_style()}) {
    const std::string svg = svg_chart(chart, style, "context");
    EXPECT_EQ(hipstudio::testing::xml_problem(svg), "") << style.name;
    // Each legend line is an entry of chart_legend, in order, with its series' colour.
    const auto lines = legend_lines(svg);
    ASSERT_EQ(lines.size(), legend.size()) << style.name;
    for (size_t i = 0; i < legend.size(); ++i) {
      EXPECT_EQ(lines[i].second, legend[i].name);
      EXPECT_EQ(lines[i].first, legend[i].note ? "" : css_color(chart_color(style, legend[i].color))) << legend[i].name;
    }
    // Each series is drawn in its colour: bars as rects of the fill, lines as polylines, points as circles.
    for (const ChartPlot& p : chart.plots)
      for (const ChartSeries& s : p.series) {
        const std::string col = css_color(chart_color(style, s.color));
        const std::string drawn = s.mark == ChartMark::Bars ? "class=\"bars\" fill=\"" + col
                                  : s.mark == ChartMark::Points ? "<circle cx=\"" : "stroke=\"" + col + "\" stroke-width";
        EXPECT_NE(svg.find(drawn), std::string::npos) << s.name << " in " << style.name;
        EXPECT_NE(svg.find(col), std::string::npos) << s.name;
      }
    EXPECT_NE(svg.find(css_color(style.background)), std::string::npos);
    EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 0, true);
    // The dashed series' break at NaN: two polylines.
    EXPECT_NE(svg.find("stroke-dasharray=\"6 4\" points="), std::string::npos);
  }
  EXPECT_NE(svg_chart(chart, paper_style()), svg_chart(chart, dark_style()));
}

// The locality chart lists its histogram, fit, each head's mean and std and the marked Delta, and
// the SVG's legend is that list.
TEST(ChartSvg, LocalityChartLegendIsWhatItDraws) {
  LocalityView v;
  v.head = 3;
  v.delta = 2;
  v.histogram.delta = 2;
  v.histogram.pairs = 10;
  v.histogram.mean = 0.1, v.histogram.stddev = 1, v.histogram.hist_lo = -2, v.histogram.hist_hi = 2;
  v.histogram.counts = {1, 4, 4, 1};
  v.histogram.kl_to_normal = 0.02;
  v.fitted = {1.5, 3.5, 3.5, 1.5};
  for (int64_t d : {1, 2, 4}) {
    hip::DeltaStats st = v.histogram;
    st.delta = d, st.mean = 0.01 * d, st.stddev = 0.5 * d;
    v.curve.push_back(st);
  }
  LocalityView w = v;
  w.head = 4;
  const Chart chart = locality_chart({v, w}, "locality");
  std::vector<std::string> names;
  for (const ChartLegendEntry& e : chart_legend(chart)) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"observed (Delta = 2)", "N(0.1, 1^2)", "head 3 mean", "head 3 std", "head 4 mean", "head 4 std",
                                             "histogram's Delta (head 3)", "KL 0.02"}));
  const std::string svg = svg_chart(chart, dark_style());
  const auto lines = legend_lines(svg);
  ASSERT_EQ(lines.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(lines[i].second, xml_escape(names[i]));
  // Without spread there is no normal to draw, and the legend does not list one.
  v.histogram.stddev = 0;
  for (const ChartLegendEntry& e : chart_legend(locality_histogram_chart(v, "h"))) EXPECT_EQ(e.name.find("N("), std::string::npos);
}

}  // namespace
}  // namespace hipstudio::viz
