// Exports are renderings of the screen's views (viz): the mask PNG's size and colours, the locality
// SVG's histogram and the plots' ticks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "captures/export_view.h"
#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "captures/svg_plots.h"
#include "tests/captures/capture_fixture.h"
#include "viz/mask_image.h"
#include "viz/plot_data.h"

namespace hipstudio::captures {
namespace {

const Capture& fixture() {
  static const Capture c = hipstudio::testing::synthetic_capture();
  return c;
}

// Width and height from a PNG's IHDR.
std::pair<int64_t, int64_t> png_size(const std::string& png) {
  auto be32 = [&](size_t at) {
    return int64_t{static_cast<uint8_t>(png.at(at))} << 24 | int64_t{static_cast<uint8_t>(png.at(at + 1))} << 16 |
           int64_t{static_cast<uint8_t>(png.at(at + 2))} << 8 | int64_t{static_cast<uint8_t>(png.at(at + 3))};
  };
  return {be32(16), be32(20)};
}

// The text of every <text class="CLASS" ...>VALUE</text>, in document order.
std::vector<std::string> texts_of_class(const std::string& svg, const std::string& cls) {
  std::vector<std::string> out;
  const std::regex re("<text class=\"" + cls + "\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) out.push_back((*it)[1]);
  return out;
}

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(ExportsViz, MaskPngLongestSideIsExactlyPx) {
  const Capture& c = fixture();
  const MaskExport mask = mask_export(c.masks[1], c.analysis.options.hip.hip, 40, 1);
  for (int64_t px : {1, 7, 39, 40, 41, 200, 931, 1024}) {
    const RgbImage im = render_mask(mask, px);
    EXPECT_EQ(im.width, px);  // a prompt's picture is square
    EXPECT_EQ(im.height, px);
    EXPECT_EQ(im.rgb.size(), static_cast<size_t>(px * px * 3));
  }
  // Through `export --px`, as the command line asks for it.
  ExportRequest r;
  r.what = "mask", r.format = "png", r.layer = 1, r.head = 0, r.px = 1024;
  EXPECT_EQ(png_size(export_view(c, r)), std::make_pair(int64_t{1024}, int64_t{1024}));
  r.px = 0;  // full detail: one pixel per key block on both axes
  EXPECT_EQ(png_size(export_view(c, r)), std::make_pair(int64_t{20}, int64_t{20}));
  // A picture wider than tall keeps its aspect; the longest side is still exact.
  MaskExport wide;
  wide.picture.tq = 10, wide.picture.tk = 40, wide.picture.b_q = 4, wide.picture.b_k = 2;
  wide.picture.dense_from = {38, 38, 38};
  wide.palette = viz::light_mask_palette();
  const RgbImage im = render_mask(wide, 1024);
  EXPECT_EQ(im.width, 1024);
  EXPECT_EQ(im.height, 256);
}

TEST(ExportsViz, MaskPaletteIsVizsForEveryCellClass) {
  const Capture& c = fixture();
  for (int64_t head = 0; head < 2; ++head) {
    const MaskExport mask = mask_export(c.masks[1], c.analysis.options.hip.hip, 40, head);
    viz::MaskPalette screen = viz::light_mask_palette();  // the mask panel's defaults
    screen.show_oracle = true, screen.show_random = false, screen.show_sink_dense = true;
    const std::map<uint32_t, std::string> classes{{screen.hit, "hit"},   {screen.false_pick, "false pick"}, {screen.miss, "miss"},
                                                  {screen.sink, "sink"}, {screen.dense, "dense tail"},          {screen.empty, "not attended"},
                                                  {screen.future, "future"}};
    const RgbImage im = render_mask(mask, 40);  // one pixel per token
    std::set<std::string> seen;
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        const uint32_t want = viz::mask_texel_color(viz::mask_cell_flags(mask.picture, i, j), screen);
        const uint8_t* got = &im.rgb[static_cast<size_t>((i * 40 + j) * 3)];
        ASSERT_EQ(viz::pack_rgba8(got[0], got[1], got[2]), want) << "query " << i << ", key " << j;
        seen.insert(classes.at(want));
      }
    for (const char* cls : {"hit", "sink", "dense tail", "not attended", "future"}) EXPECT_TRUE(seen.count(cls)) << cls;
  }
  // Exports take the colour-blind-safe outcome colours (Okabe-Ito yellow hit, bluish-green dense
  // tail), as the screen does by default.
  const viz::MaskPalette light = viz::light_mask_palette();
  EXPECT_EQ(light.hit, viz::pack_rgba8(240, 228, 66));
  EXPECT_EQ(light.dense, viz::pack_rgba8(0, 158, 115));
  // The report's legend lists those colours.
  const std::string html = html_report(c);
  EXPECT_NE(html.find("background:#f0e442\"></span>hit (HiP and oracle)"), std::string::npos);
  EXPECT_NE(html.find("background:#009e73\"></span>dense tail"), std::string::npos);
}

TEST(ExportsViz, LocalitySvgHasTheHistogramBars) {
  const Capture& c = fixture();
  ExportRequest r;
  r.what = "locality", r.format = "svg", r.layer = 1, r.head = 0;
  const std::string svg = export_view(c, r);
  const hip::DeltaStats& first = c.locality[1][0].deltas.at(0);
  EXPECT_EQ(occurrences(svg, "<rect class=\"bar\""), first.counts.size());
  EXPECT_EQ(occurrences(svg, "class=\"normal-fit\""), 1u);
  EXPECT_NE(svg.find("observed (Delta = " + std::to_string(first.delta) + ")"), std::string::npos);
  EXPECT_NE(svg.find("head " + std::to_string(c.locality[1][0].head) + " mean"), std::string::npos);  // the curves beside it
  // The fitted normal is the views layer's: one point per bin (expected pairs per bin at the bin centre).
  const size_t at = svg.find("class=\"normal-fit\"");
  const size_t points = svg.find("points=\"", at) + 8;
  const std::string list = svg.substr(points, svg.find('"', points) - points);
  EXPECT_EQ(occurrences(list, ","), locality_fitted_counts(first).size());
}

TEST(ExportsViz, TicksComeFromVizsRule) {
  const Capture& c = fixture();
  // Hit ratio: y fixed to [0, 1], ticked as the screen's plots tick y (viz::nice_ticks, 4).
  std::vector<std::string> want;
  for (double v : viz::nice_ticks(0.0, 1.0, 4)) want.push_back(viz::tick_label(v));
  EXPECT_EQ(texts_of_class(svg_hit_ratio_per_step(c.offload), "y-tick"), want);
  // Locality curves: Delta on a log axis, ticked at viz::log_ticks.
  const std::vector<hip::ScoreLocality>& heads = c.locality[1];
  const std::string svg = svg_locality(captured_locality_views(c, 1, -1), "t");
  double lo = 1e300, hi = 0;
  for (const hip::DeltaStats& d : heads[0].deltas) lo = std::min(lo, double(d.delta)), hi = std::max(hi, double(d.delta));
  std::vector<std::string> log_labels;
  for (double v : viz::log_ticks(lo, hi)) log_labels.push_back(viz::tick_label(v));
  ASSERT_FALSE(log_labels.empty());
  const std::vector<std::string> x = texts_of_class(svg, "x-tick");
  ASSERT_GE(x.size(), log_labels.size());
  EXPECT_EQ(std::vector<std::string>(x.end() - static_cast<long>(log_labels.size()), x.end()), log_labels);  // after the histogram's
  // A linear x axis: every label is one of viz::nice_ticks' values.
  const std::string chart = svg_line_chart("t", "x", "y", {{"s", {0, 10}, {0, 1}, "", true}});
  for (const std::string& label : texts_of_class(chart, "x-tick")) {
    bool found = false;
    for (int target = 2; target <= 12 && !found; ++target)
      for (double v : viz::nice_ticks(0, 10, target)) found = found || viz::tick_label(v) == label;
    EXPECT_TRUE(found) << label;
  }
}

TEST(ExportsViz, HitRatioCurvesBothShow) {
  const std::string svg = svg_hit_ratio_per_step(fixture().offload);
  const size_t sparse = svg.find("<g class=\"series\">"), mask = svg.find("<g class=\"series\">", sparse + 1);
  ASSERT_NE(mask, std::string::npos);
  // Sparse attention first and solid; mask estimation over it, dashed with ring markers.
  const std::string first = svg.substr(sparse, mask - sparse), second = svg.substr(mask, svg.find("</g>", mask) - mask);
  EXPECT_EQ(first.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(second.find("stroke-dasharray=\"6 4\""), std::string::npos);
  EXPECT_NE(second.find("fill=\"#ffffff\""), std::string::npos);  // rings in the paper's background
  EXPECT_LT(svg.find(">sparse attention ("), svg.find(">mask estimation ("));
}

}  // namespace
}  // namespace hipstudio::captures
