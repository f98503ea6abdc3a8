// Exported figures (viz/figure.h, viz/raster.h, captures/mask_figure.cpp, iteration_figure.cpp):
// the mask PNG figure's pixels are the mask panel's picture inside the laid-out rectangle, with the
// legend's colours in its swatches and text where the layout puts it; the SVG figures are valid
// XML with what the screen shows. HIPSTUDIO_FIGURE_DIR=DIR also writes them there, to look at.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "viz/stb_truetype_static.h"  // the test's own copy: the reference metrics

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
#include "engine/views/dense_view.h"
#include "viz/figure.h"
#include "viz/heat_image.h"
#include "viz/plot_data.h"
#include "viz/raster.h"
#include "viz/vector_font.h"

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

// stb_truetype's own box of a line at em size px, pen starting at x = 0 on the baseline (glyph
// by glyph with kerning and subpixel pen positions, as its documentation's sample lays a line out):
// the reference the rasterised line's ink must fill.
struct InkBox {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -(1 << 30), y1 = -(1 << 30);
};
#if HIPSTUDIO_HAVE_TRUETYPE
InkBox stb_line_box(const std::string& text, double px, double* advance) {
  static const std::string font = [] {
    std::ifstream in(viz::kSansFontPath, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  stbtt_fontinfo f{};
  const auto* data = reinterpret_cast<const unsigned char*>(font.data());
  EXPECT_TRUE(stbtt_InitFont(&f, data, stbtt_GetFontOffsetForIndex(data, 0)));
  const float scale = stbtt_ScaleForMappingEmToPixels(&f, static_cast<float>(px));
  InkBox box;
  double pen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int c = static_cast<unsigned char>(text[i]);
    int x0, y0, x1, y1, adv, lsb;
    const double whole = std::floor(pen);
    stbtt_GetCodepointBitmapBoxSubpixel(&f, c, scale, scale, static_cast<float>(pen - whole), 0, &x0, &y0, &x1, &y1);
    if (x1 > x0) {
      box.x0 = std::min(box.x0, x0 + static_cast<int>(whole)), box.x1 = std::max(box.x1, x1 + static_cast<int>(whole));
      box.y0 = std::min(box.y0, y0), box.y1 = std::max(box.y1, y1);
    }
    stbtt_GetCodepointHMetrics(&f, c, &adv, &lsb);
    pen += adv * static_cast<double>(scale);
    if (i + 1 < text.size()) pen += stbtt_GetCodepointKernAdvance(&f, c, static_cast<unsigned char>(text[i + 1])) * static_cast<double>(scale);
  }
  *advance = pen;
  return box;
}
#else
InkBox stb_line_box(const std::string&, double, double* advance) {
  *advance = 0;
  return {};
}
#endif

// The ink of a raster: its bounding box and how many pixels are partly covered (antialiasing).
struct Ink {
  InkBox box;
  int pixels = 0, partial = 0;
};
Ink ink_of(const viz::Raster& r, uint32_t background) {
  Ink k;
  for (int y = 0; y < r.height(); ++y)
    for (int x = 0; x < r.width(); ++x) {
      const uint32_t c = r.at(x, y);
      if (c == background) continue;
      ++k.pixels;
      const uint32_t g = c & 0xff;  // white on black: the grey level is the coverage
      k.partial += g > 0 && g < 255;
      k.box.x0 = std::min(k.box.x0, x), k.box.x1 = std::max(k.box.x1, x + 1);
      k.box.y0 = std::min(k.box.y0, y), k.box.y1 = std::max(k.box.y1, y + 1);
    }
  return k;
}

TEST(Raster, TextIsTheScreensVectorFontAtStbTruetypesMetrics) {
  if (!HIPSTUDIO_HAVE_TRUETYPE || !viz::Raster::has_text())
    GTEST_SKIP() << "no figure text here: " << viz::kSansFontPath << " (fonts-dejavu-core) or stb/stb_truetype.h (libstb-dev) is missing";
  const uint32_t black = viz::pack_rgba8(0, 0, 0), white = viz::pack_rgba8(255, 255, 255);
  for (const double px : {11.0, 18.4, 30.0}) {
    for (const std::string text : {"query token", "key token", "HiP mask, layer 4, head 3", "80"}) {
      double advance = 0;
      const InkBox ref = stb_line_box(text, px, &advance);
      EXPECT_NEAR(viz::Raster::text_width(text, px), advance, 1e-6) << text;
      EXPECT_NEAR(viz::figure_text_width(text, px), advance, 1e-6) << text;
      viz::Raster r(static_cast<int>(advance) + 40, static_cast<int>(px * 3), black);
      const int ox = 20, base = static_cast<int>(px * 2);
      r.text(ox, base, text, white, px);
      const Ink k = ink_of(r, black);
      // The ink fills stb_truetype's box of the line (its edge rows may hold no coverage: <= 1 px in).
      EXPECT_GE(k.box.x0, ox + ref.x0) << text << " at " << px;
      EXPECT_LE(k.box.x0, ox + ref.x0 + 1) << text << " at " << px;
      EXPECT_LE(k.box.x1, ox + ref.x1) << text;
      EXPECT_GE(k.box.x1, ox + ref.x1 - 1) << text;
      EXPECT_GE(k.box.y0, base + ref.y0) << text;
      EXPECT_LE(k.box.y0, base + ref.y0 + 1) << text;
      EXPECT_LE(k.box.y1, base + ref.y1) << text;
      EXPECT_GE(k.box.y1, base + ref.y1 - 1) << text;
      // Antialiased outlines, not a bitmap font's two levels: a share of the ink is partial coverage.
      EXPECT_GT(k.partial * 5, k.pixels) << text << " at " << px << ": " << k.partial << " of " << k.pixels;
      // Turned a quarter turn anticlockwise: the same ink, its box transposed (the line runs up from the baseline point).
      viz::Raster up(static_cast<int>(px * 3), static_cast<int>(advance) + 40, black);
      up.text_up(base, up.height() - ox, text, white, px);
      const Ink u = ink_of(up, black);
      EXPECT_EQ(u.pixels, k.pixels) << text;
      EXPECT_EQ(u.box.x1 - u.box.x0, k.box.y1 - k.box.y0) << text;
      EXPECT_EQ(u.box.y1 - u.box.y0, k.box.x1 - k.box.x0) << text;
      EXPECT_EQ(u.box.x0, base + (k.box.y0 - base)) << text;           // glyph tops point left
      EXPECT_EQ(u.box.y1, up.height() - ox - (k.box.x0 - ox)) << text;  // the line starts at the bottom
    }
  }
  // Blending keeps what lies under partial coverage: red under white text turns pink, not white.
  viz::Raster r(60, 30, viz::pack_rgba8(255, 0, 0));
  r.text(5, 20, "o", viz::pack_rgba8(255, 255, 255), 20);
  bool pink = false;
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 60; ++x) {
      const uint32_t c = r.at(x, y);
      pink = pink || ((c & 0xff) == 255 && ((c >> 8) & 0xff) > 0 && ((c >> 8) & 0xff) < 255);
    }
  EXPECT_TRUE(pink);
}

// The exported figures' only text path is the vector font: no bitmap font is left in the sources.
TEST(Raster, NoBitmapFontRemains) {
  for (const char* dir : {"viz", "captures", "app"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(HIPSTUDIO_SOURCE_DIR) + "/" + dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path());
      const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(body.find(std::string("stb_easy") + "_font"), std::string::npos) << e.path();
    }
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
    const viz::FigureType type = viz::mask_figure_type(static_cast<double>(side));
    const auto tw = [&type](const std::string& s) { return viz::Raster::text_width(s, type.font); };
    const viz::MaskFigureLayout f = viz::layout_mask_figure(text, 40, 40, static_cast<double>(side), type.line_height, tw);
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
    // The query axis' name is turned and centred on the picture's height, left of its tick labels
    // (where the SVG puts it): ink in that column around the middle, page above and below.
    const viz::FigureLabel* query = nullptr;
    for (const auto& l : f.labels)
      if (l.up) query = &l;
    ASSERT_NE(query, nullptr);
    EXPECT_EQ(query->text, "query token");
    EXPECT_NEAR(query->y, f.img_y + f.img_h / 2, 1);
    const double qw = viz::Raster::text_width(query->text, type.font);
    auto column_ink = [&](double y0, double y1) {
      int n = 0;
      for (auto y = static_cast<int64_t>(y0); y < static_cast<int64_t>(y1); ++y)
        for (auto x = static_cast<int64_t>(query->x); x < static_cast<int64_t>(query->x + type.line_height); ++x) n += pixel(im, x, y) != style.background;
      return n;
    };
    EXPECT_GT(column_ink(query->y - qw / 2, query->y + qw / 2), 40) << "side " << side;
    EXPECT_EQ(column_ink(f.img_y, query->y - qw / 2 - 2), 0) << "side " << side;
    EXPECT_EQ(column_ink(query->y + qw / 2 + 2, f.img_y + f.img_h), 0) << "side " << side;
    // Margins as in the SVG: the same layout puts the SVG's picture at the PNG's rectangle.
    const std::string svg = svg_mask_figure(mask, text, style, static_cast<double>(side));
    char at[96];
    std::snprintf(at, sizeof at, "translate(%.2f %.2f)", f.img_x, f.img_y);
    EXPECT_NE(svg.find(at), std::string::npos) << at;
    EXPECT_NE(svg.find("rotate(-90 "), std::string::npos);
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
    const BlockTraceView view = captured_trace_view(c, t);
    const auto steps = viz::trace_steps(t.trace, view.oracle_blocks);
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
    const std::string svg = svg_iterations(view, iterations_title(t), iterations_subtitle(c, t));
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
  hipstudio::AttentionProbe probe;
  const std::vector<double> row = hipstudio::dense_probability_row(in, {}, 1, 17);
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
  hipstudio::AttentionProbe probe;
  const std::vector<double> row = hipstudio::dense_probability_row(in, rule, head, query);
  ASSERT_EQ(row.size(), want.size());
  for (size_t j = 0; j < row.size(); ++j) {
    EXPECT_NEAR(row[j], want[j] / total, 1e-12) << "key " << j;
    const hipstudio::ProbeValue pv = probe.at(in, rule, head, query, static_cast<int64_t>(j));
    EXPECT_EQ(pv.visible, want[j] > 0) << "key " << j;
    if (pv.visible) {
      EXPECT_NEAR(pv.probability, want[j] / total, 1e-12) << "key " << j;
    }
  }
  // The plain rule differs on the same row: the test would catch a view that ignored the layer's rule.
  EXPECT_GT(std::abs(hipstudio::dense_probability_row(in, {}, head, query)[static_cast<size_t>(pos)] - row.back()), 1e-6);
}

}  // namespace
