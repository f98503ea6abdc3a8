// Exported figures (viz/figure.h, viz/raster.h, captures/mask_figure.cpp, iteration_figure.cpp):
// the mask PNG figure's pixels are the mask panel's picture inside the laid-out rectangle, with the
// legend's colours in its swatches and text where the layout puts it; the SVG figures are valid
// XML with what the screen shows. HIPSTUDIO_FIGURE_DIR=DIR also writes them there, to look at.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "captures/export_view.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "captures/svg_plots.h"
#include "engine/formats/errors.h"
#include "tests/captures/capture_fixture.h"
#include "tests/captures/xml_check.h"
#include "engine/analysis/layer_view.h"
#include "viz/attention_probe.h"
#include "viz/figure.h"
#include "viz/heat_image.h"
#include "viz/plot_data.h"
#include "viz/raster.h"

namespace {

using namespace hipstudio;
using namespace hipstudio::captures;

void keep(const std::string& name, const std::string& bytes) {
  if (const char* dir = std::getenv("HIPSTUDIO_FIGURE_DIR")) std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << bytes;
}

uint32_t pixel(const RgbImage& im, int64_t x, int64_t y) {
  const uint8_t* p = &im.rgb[static_cast<size_t>((y * im.width + x) * 3)];
  return viz::pack_rgba8(p[0], p[1], p[2]);
}

TEST(Raster, TextDrawsInkAndWidthGrowsWithLength) {
  ASSERT_TRUE(viz::Raster::has_text()) << "libstb-dev's stb_easy_font.h is missing";
  viz::Raster r(200, 40, 0);
  r.text(4, 4, "layer 4", viz::pack_rgba8(255, 255, 255), 2);
  int ink = 0, max_x = 0;
  for (int y = 0; y < r.height(); ++y)
    for (int x = 0; x < r.width(); ++x)
      if (r.at(x, y) != 0) ++ink, max_x = std::max(max_x, x);
  EXPECT_GT(ink, 40);
  EXPECT_LE(max_x, 4 + viz::Raster::text_width("layer 4", 2));
  EXPECT_GT(viz::Raster::text_width("layer 44", 1), viz::Raster::text_width("layer 4", 1));
  EXPECT_EQ(viz::Raster::text_width("ab", 2), 2 * viz::Raster::text_width("ab", 1));
  // Each glyph draws in full whatever precedes it: "80"'s zero has the ink of a lone "0".
  auto ink_of = [](const std::string& s, int x0, int x1) {
    viz::Raster r(100, 20, 0);
    r.text(0, 0, s, 1u, 1);
    int n = 0;
    for (int y = 0; y < r.height(); ++y)
      for (int x = x0; x < x1; ++x) n += r.at(x, y) != 0;
    return n;
  };
  const int w8 = viz::Raster::text_width("8", 1), w88 = viz::Raster::text_width("888", 1);
  EXPECT_EQ(ink_of("880", w88 - w8, 100), ink_of("0", 0, 100));
}

TEST(ExportFigure, MaskPngIsThePanelsPictureWithLegendAndTitle) {
  const Capture c = hipstudio::testing::synthetic_capture();
  const viz::FigureStyle style = viz::paper_style();
  const MaskExport mask = mask_export(c.masks[1], c.analysis.options.hip.hip, 40, 1, style);
  const viz::MaskFigureText text = mask_figure_text(mask, c.analysis, 1, 1);
  EXPECT_EQ(text.title, "HiP mask, layer 1, head 1");
  EXPECT_NE(text.subtitle.find("k 8, b_q 4, b_k 2"), std::string::npos) << text.subtitle;
  EXPECT_NE(text.subtitle.find("recall vs oracle"), std::string::npos);
  for (int64_t side : {240, 512, 1024, 1500}) {
    const RgbImage im = render_mask_figure(mask, text, side, style);
    ASSERT_EQ(im.width, side);
    ASSERT_EQ(im.height, side);
    const int scale = std::max(1, static_cast<int>(std::lround(side / 512.0)));
    const auto tw = [scale](const std::string& s) { return static_cast<double>(viz::Raster::text_width(s, scale)); };
    const viz::MaskFigureLayout f = viz::layout_mask_figure(text, 40, 40, static_cast<double>(side), viz::Raster::line_height(scale), tw);
    ASSERT_GT(f.img_w, 40);
    // Every token cell's centre has the colour the mask panel gives that cell.
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        const auto x = static_cast<int64_t>(f.img_x + (static_cast<double>(j) + 0.5) * f.img_w / 40);
        const auto y = static_cast<int64_t>(f.img_y + (static_cast<double>(i) + 0.5) * f.img_h / 40);
        ASSERT_EQ(pixel(im, x, y), viz::mask_texel_color(viz::mask_cell_flags(mask.picture, i, j), mask.palette))
            << "side " << side << ", query " << i << ", key " << j;
      }
    // The legend's swatches hold its colours, in order.
    ASSERT_EQ(f.swatches.size(), text.legend.size());
    for (size_t k = 0; k < f.swatches.size(); ++k)
      EXPECT_EQ(pixel(im, static_cast<int64_t>(f.swatches[k].x + f.swatches[k].size / 2), static_cast<int64_t>(f.swatches[k].y + f.swatches[k].size / 2)),
                text.legend[k].second)
          << text.legend[k].first;
    // The title is drawn: ink in its line, nothing but page above it.
    int ink = 0;
    for (int64_t y = static_cast<int64_t>(f.labels[0].y); y < static_cast<int64_t>(f.labels[0].y + f.line_height); ++y)
      for (int64_t x = 0; x < im.width; ++x) ink += pixel(im, x, y) != style.background;
    EXPECT_GT(ink, 50) << "side " << side;
    if (side == 1024) keep("mask_figure_1024.png", encode_png(im));
  }
  // Key ticks are viz's nice ticks over the token range, labelled by tick_label.
  const auto tw = [](const std::string& s) { return 7.0 * static_cast<double>(s.size()); };
  const viz::MaskFigureLayout f = viz::layout_mask_figure(text, 40, 40, 800, 14, tw);
  std::set<std::string> labels;
  for (const auto& l : f.labels) labels.insert(l.text);
  for (double t : viz::cell_ticks(0, 39, std::max(2, static_cast<int>(f.img_w / 70)))) EXPECT_TRUE(labels.count(viz::tick_label(t))) << t;
  // A 5-token prompt: whole tokens only (the CLI's first export showed "2.5").
  const viz::MaskFigureLayout tiny = viz::layout_mask_figure(text, 5, 5, 800, 14, tw);
  for (const auto& l : tiny.labels)
    if (!l.text.empty() && l.text.find_first_not_of("0123456789.") == std::string::npos) {  // a tick label
      EXPECT_EQ(l.text.find('.'), std::string::npos) << l.text;
    }
  EXPECT_TRUE(labels.count("key token"));
  // Too small for text: the bare picture, still exactly the size asked for.
  const RgbImage small = render_mask_figure(mask, text, 100, style);
  EXPECT_EQ(small.width, 100);
  EXPECT_EQ(small.height, 100);
}

TEST(ExportFigure, ExportViewPngAtPx1024HasLongestSide1024) {
  const Capture c = hipstudio::testing::synthetic_capture();
  ExportRequest r;
  r.what = "mask", r.format = "png", r.layer = 1, r.head = 1, r.px = 1024;
  const std::string png = export_view(c, r);
  ASSERT_GT(png.size(), 24u);
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(png[at])) << 24) | (static_cast<uint32_t>(static_cast<uint8_t>(png[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(png[at + 2])) << 8) | static_cast<uint32_t>(static_cast<uint8_t>(png[at + 3]));
  };
  EXPECT_EQ(std::max(be32(16), be32(20)), 1024u);
  r.style = "nonsense";
  EXPECT_THROW(export_view(c, r), hipstudio::InputError);
}

TEST(ExportFigure, MaskSvgIsVectorWithThePanelsColours) {
  const Capture c = hipstudio::testing::synthetic_capture();
  for (const std::string style_name : {"paper", "dark"}) {
    const viz::FigureStyle style = viz::figure_style(style_name);
    const MaskExport mask = mask_export(c.masks[1], c.analysis.options.hip.hip, 40, 0, style);
    const viz::MaskFigureText text = mask_figure_text(mask, c.analysis, 1, 0);
    const std::string svg = svg_mask_figure(mask, text, style);
    EXPECT_EQ(hipstudio::testing::xml_problem(svg), "");
    EXPECT_EQ(svg.find("<image"), std::string::npos);  // no raster inside
    EXPECT_NE(svg.find("fill=\"" + viz::css_color(style.background) + "\""), std::string::npos);
    // Each colour the picture uses is a path; each legend colour appears.
    std::set<uint32_t> used;
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 40; ++j) used.insert(viz::mask_texel_color(viz::mask_cell_flags(mask.picture, i, j), mask.palette));
    for (uint32_t col : used) EXPECT_NE(svg.find("<path fill=\"" + viz::css_color(col) + "\""), std::string::npos) << viz::css_color(col);
    for (const auto& [name, col] : text.legend) {
      EXPECT_NE(svg.find(">" + name + "</text>"), std::string::npos) << name;
      EXPECT_NE(svg.find(viz::css_color(col)), std::string::npos) << name;
    }
    EXPECT_NE(svg.find(text.title), std::string::npos);
    keep("mask_figure_" + style_name + ".svg", svg);
  }
  // The paper style is light whatever the screen shows; the dark one is the UI's.
  EXPECT_EQ(viz::paper_style().mask.hit, viz::light_mask_palette().hit);
  EXPECT_EQ(viz::dark_style().mask.hit, viz::dark_mask_palette().hit);
}

TEST(ExportFigure, PrunedAtStepMatchesTheSteps) {
  const Capture c = hipstudio::testing::synthetic_capture();
  ASSERT_FALSE(c.traces.empty());
  for (const CapturedTrace& t : c.traces) {
    const std::vector<int32_t> oracle = captured_oracle_blocks(c, t);
    const auto steps = viz::trace_steps(t.trace, oracle);
    const auto left = viz::pruned_at_step(steps, t.trace.lo, t.trace.hi);
    // Brute force: the number of leading steps whose nodes hold the block.
    for (int64_t b = t.trace.lo; b < t.trace.hi; ++b) {
      int lead = 0;
      for (const auto& st : steps) {
        bool in = false;
        for (const auto& [b0, b1] : st.nodes) in = in || (b >= b0 && b < b1);
        if (!in) break;
        ++lead;
      }
      EXPECT_EQ(left[static_cast<size_t>(b - t.trace.lo)], lead) << "block " << b;
    }
    const std::string svg = svg_iterations(t.trace, oracle, iterations_title(t), iterations_subtitle(c, t));
    EXPECT_EQ(hipstudio::testing::xml_problem(svg), "");
    size_t rows = 0;
    for (size_t at = svg.find("class=\"step\""); at != std::string::npos; at = svg.find("class=\"step\"", at + 1)) ++rows;
    EXPECT_EQ(rows, steps.size());
    if (t.trace.iterations.size() > 1) {
      EXPECT_NE(svg.find("pruned by iteration 1"), std::string::npos);
    }
    keep("iterations_L" + std::to_string(t.layer) + ".svg", svg);
  }
  ExportRequest r;
  r.what = "iterations", r.format = "svg", r.layer = c.traces[0].layer, r.head = c.traces[0].trace.head;
  EXPECT_EQ(hipstudio::testing::xml_problem(export_view(c, r)), "");
}

}  // namespace

namespace {

using namespace hipstudio;

TEST(ExportFigure, SavedImagesAreOfTheViewedHeadAndDelta) {
  const captures::Capture c = hipstudio::testing::synthetic_capture();
  captures::FigureOptions o;
  o.head = 1;
  o.delta = c.locality_params.deltas.at(1);
  std::set<std::string> names;
  for (const captures::Figure& f : captures::capture_figures(c, o)) names.insert(f.name);
  for (int64_t l : c.view_layers) EXPECT_TRUE(names.count("mask_L" + std::to_string(l) + "_H1.png")) << l;
  const int64_t last = c.view_layers.back();
  EXPECT_TRUE(names.count("locality_hist_L" + std::to_string(last) + "_H1_D" + std::to_string(o.delta) + ".svg"));
  for (const std::string& n : names)  // nothing of head 0 (iteration figures are of the traced blocks' heads)
    if (n.rfind("iterations_", 0) != 0) {
      EXPECT_EQ(n.find("_H0"), std::string::npos) << n;
    }
}

TEST(VizViews, DensePictureAttendsEveryVisibleKey) {
  hip::HipParams p;
  p.b_q = 4, p.b_k = 2;
  const viz::MaskPicture m = viz::make_dense_picture(10, 10, p);
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 10; ++j) {
      const uint8_t f = viz::mask_cell_flags(m, i, j);
      if (j <= i) {
        EXPECT_EQ(f, viz::kMaskVisible | viz::kMaskDense) << i << "," << j;
      } else {
        EXPECT_EQ(f, 0) << i << "," << j;
      }
    }
}

TEST(VizViews, LogScaleSpreadsSmallProbabilities) {
  // Decades map to equal steps: 1e-4 -> 0, 1e-2 -> 0.5, 1 -> 1; below the floor stays 0.
  EXPECT_DOUBLE_EQ(viz::log_scale_position(1e-4, 1e-4, 1), 0.0);
  EXPECT_NEAR(viz::log_scale_position(1e-2, 1e-4, 1), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(viz::log_scale_position(1, 1e-4, 1), 1.0);
  EXPECT_DOUBLE_EQ(viz::log_scale_position(1e-6, 1e-4, 1), 0.0);
  viz::HeatGrid g;
  g.rows = 1, g.cols = 3;
  g.values = {1e-3f, 0.1f, std::nanf("")};
  std::vector<uint32_t> rgba;
  viz::colorize_heat_log(g, viz::ColorMapKind::Magma, 1e-4f, 1.0f, 7u, rgba);
  EXPECT_EQ(rgba[0], viz::pack_rgba(viz::colormap(viz::ColorMapKind::Magma, viz::log_scale_position(1e-3f, 1e-4f, 1.0f))));
  EXPECT_EQ(rgba[2], 7u);
  // A linear scale would put 1e-3 and 0.1 within 10% of black; the log one spreads them.
  EXPECT_GT(viz::log_scale_position(0.1, 1e-4, 1) - viz::log_scale_position(1e-3, 1e-4, 1), 0.4);
}

TEST(VizViews, DenseRowIsTheProbesSoftmax) {
  const PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  const hip::AttentionInputs in = layer_view(a.inputs.at(0));
  viz::AttentionProbe probe;
  const std::vector<double> row = viz::dense_probability_row(in, {}, 1, 17);
  ASSERT_EQ(row.size(), 18u);
  double sum = 0;
  for (size_t j = 0; j < row.size(); ++j) {
    sum += row[j];
    EXPECT_DOUBLE_EQ(row[j], probe.at(in, {}, 1, 17, static_cast<int64_t>(j)).probability);
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

// A windowed, soft-capped layer's row against the rule written out here: logits
// cap * tanh(scale * q.k / cap) over the last `window` keys, softmax, zero elsewhere.
TEST(VizViews, DenseRowFollowsTheLayersWindowAndSoftCap) {
  const PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  const hip::AttentionInputs in = layer_view(a.inputs.at(0));
  hip::AttentionRule rule;
  rule.window = 5;
  rule.score.scale = 0.7;
  rule.score.softcap = 2.0;
  const int64_t head = 1, query = 17, pos = hip::query_position(in, query);
  std::vector<double> want(static_cast<size_t>(pos + 1), 0.0);
  double total = 0;
  for (int64_t j = pos - rule.window + 1; j <= pos; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < in.d; ++c)
      dot += static_cast<double>(hip::q_row(in, head, query)[c]) * hip::k_row(in, hip::kv_head(in, head), j)[c];
    want[static_cast<size_t>(j)] = std::exp(2.0 * std::tanh(0.7 * dot / 2.0));
    total += want[static_cast<size_t>(j)];
  }
  viz::AttentionProbe probe;
  const std::vector<double> row = viz::dense_probability_row(in, rule, head, query);
  ASSERT_EQ(row.size(), want.size());
  for (size_t j = 0; j < row.size(); ++j) {
    EXPECT_NEAR(row[j], want[j] / total, 1e-12) << "key " << j;
    const viz::ProbeValue pv = probe.at(in, rule, head, query, static_cast<int64_t>(j));
    EXPECT_EQ(pv.visible, want[j] > 0) << "key " << j;
    if (pv.visible) {
      EXPECT_NEAR(pv.probability, want[j] / total, 1e-12) << "key " << j;
    }
  }
  // The plain rule differs on the same row: the test would catch a view that ignored the layer's rule.
  EXPECT_GT(std::abs(viz::dense_probability_row(in, {}, head, query)[static_cast<size_t>(pos)] - row.back()), 1e-6);
}

}  // namespace
