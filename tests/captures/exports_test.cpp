// Exports: CSV, Chrome trace nesting, SVG validity, PNG decoding, the HTML report, SHA-256.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

// stb_image decodes the PNGs where Debian's libstb-dev is installed; elsewhere (the GPU machine)
// the test reads the PNG header's size only.
#if __has_include(<stb/stb_image.h>)
#define HIPSTUDIO_HAVE_STB_READ 1
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
#define HIPSTUDIO_HAVE_STB_READ 0
#endif

#include "captures/export_view.h"
#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "captures/npy.h"
#include "captures/sha256.h"
#include "engine/formats/errors.h"
#include "captures/svg_plots.h"
#include "tests/captures/capture_fixture.h"
#include "tests/captures/xml_check.h"
#include "viz/colormap.h"
#include "viz/mask_image.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

const Capture& fixture() {
  static const Capture c = hipstudio::testing::synthetic_capture();
  return c;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(Exports, CsvTablesHaveAHeaderAndOneRowPerItem) {
  const Capture& c = fixture();
  EXPECT_EQ(lines(csv_layer_head_metrics(c)), 1u + 2 * 2);
  EXPECT_EQ(csv_layer_head_metrics(c).rfind("layer,head,dense_layer,recall", 0), 0u);
  EXPECT_EQ(lines(csv_token_nll(c)), 1u + 39);
  EXPECT_EQ(lines(csv_latency(c)), 1u + 2 * (2 + 1 + 2 + 1));
  EXPECT_EQ(lines(csv_hit_ratio_per_step(c)), 1u + 2 * 3);
  EXPECT_EQ(lines(csv_decode_steps(c)), 1u + 3);
  EXPECT_NE(csv_latency(c).find("hip,prefill,all,0.25,3,2,1,6.25"), std::string::npos) << csv_latency(c);
}

TEST(Exports, ChromeTraceSlicesNest) {
  const json t = json::parse(chrome_trace(fixture()).dump());
  ASSERT_TRUE(t["traceEvents"].is_array());
  struct Slice { std::string name; int pid; double ts, dur; };
  std::vector<Slice> slices;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ASSERT_GE(e["dur"].get<double>(), 0);
    slices.push_back({e["name"], e["pid"], e["ts"], e["dur"]});
  }
  // Per process: prefill + 3 decode steps, each with 2 layers, each with its non-zero parts.
  int tops = 0, layers = 0, parts = 0;
  for (const Slice& s : slices) {
    const bool top = s.name == "prefill" || s.name.rfind("decode step", 0) == 0;
    const bool layer = s.name.rfind("layer ", 0) == 0;
    tops += top, layers += layer, parts += !top && !layer;
    if (top) continue;
    // Every child lies inside exactly one top-level slice (and parts inside a layer).
    int parents = 0;
    for (const Slice& p : slices) {
      const bool p_top = p.name == "prefill" || p.name.rfind("decode step", 0) == 0;
      const bool p_layer = p.name.rfind("layer ", 0) == 0;
      if (p.pid != s.pid || !(layer ? p_top : p_layer) || p.dur <= 0) continue;
      if (s.ts >= p.ts - 1e-9 && s.ts + s.dur <= p.ts + p.dur + 1e-9 && s.dur > 0) ++parents;
    }
    if (s.dur > 0) {
      EXPECT_EQ(parents, 1) << s.name << " at " << s.ts;
    }
  }
  EXPECT_EQ(tops, 2 * 4);
  EXPECT_EQ(layers, 2 * 4 * 2);
  EXPECT_GT(parts, layers);
  // Siblings do not overlap: top-level slices of one process are disjoint.
  for (const Slice& a : slices)
    for (const Slice& b : slices)
      if (&a != &b && a.pid == b.pid && a.name.rfind("decode step", 0) == 0 && b.name.rfind("decode step", 0) == 0) {
        EXPECT_TRUE(a.ts + a.dur <= b.ts + 1e-9 || b.ts + b.dur <= a.ts + 1e-9);
      }
}

TEST(Exports, SvgFiguresAreValidXmlWithAxesAndLabels) {
  const Capture& c = fixture();
  int svgs = 0;
  for (const Figure& f : capture_figures(c)) {
    if (f.png()) continue;
    ++svgs;
    EXPECT_EQ(hipstudio::testing::xml_problem(f.bytes), "") << f.name;
    EXPECT_NE(f.bytes.find("class=\"axes\""), std::string::npos) << f.name;
    EXPECT_NE(f.bytes.find("class=\"x-label\""), std::string::npos) << f.name;
    EXPECT_NE(f.bytes.find("class=\"y-label\""), std::string::npos) << f.name;
    EXPECT_NE(f.bytes.find("<title>"), std::string::npos) << f.name;
  }
  EXPECT_GE(svgs, 5);  // locality per layer, two histograms, hit ratio, latency
  const std::string hist = svg_locality_histogram(captured_locality_views(c, 1, c.locality_params.deltas.at(0)).at(0), "h");
  EXPECT_NE(hist.find("class=\"normal-fit\""), std::string::npos);
  EXPECT_NE(hist.find("<rect class=\"bar\" x="), std::string::npos);
  EXPECT_EQ(hipstudio::testing::xml_problem(svg_line_chart("a <b> & \"c\"", "x & y", "<y>", {{"s<1>", {1, 2}, {3, 4}, "", true}})), "");
  EXPECT_NE(hipstudio::testing::xml_problem("<svg><g></svg>"), "");  // the checker itself
}

TEST(Exports, MaskPngDecodesAndShowsTheMask) {
  const Capture& c = fixture();
  const MaskExport mask = mask_export(c.masks[1], c.analysis.options.hip.hip, 40, 0);
  EXPECT_EQ(mask.picture.tq, 40);
  EXPECT_EQ(mask.picture.tk, 40);
  EXPECT_EQ(mask.full_width(), 20);   // one pixel per key block of b_k = 2 tokens
  EXPECT_EQ(mask.full_height(), 20);  // rows too: square in tokens
  int hits = 0, dense = 0;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 40; ++j) {
      const uint8_t f = viz::mask_cell_flags(mask.picture, i, j);
      hits += (f & viz::kMaskHit) != 0;
      dense += (f & viz::kMaskDense) != 0;
    }
  EXPECT_GT(hits, 0);
  EXPECT_GT(dense, 0);
  const std::string png = encode_png(render_mask(mask, 200));
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return static_cast<int>(static_cast<uint8_t>(png[at]) << 24 | static_cast<uint8_t>(png[at + 1]) << 16 |
                            static_cast<uint8_t>(png[at + 2]) << 8 | static_cast<uint8_t>(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 200);  // IHDR width: 40 tokens, 5 px each
  EXPECT_EQ(be32(20), 200);  // height
#if HIPSTUDIO_HAVE_STB_READ
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png.data()), static_cast<int>(png.size()), &w, &h, &n, 3);
  ASSERT_NE(px, nullptr);
  EXPECT_EQ(w, 200);
  EXPECT_EQ(h, 200);
  const viz::Rgb hit = viz::unpack_rgb(viz::light_mask_palette().hit);  // the screen's yellow
  int selected = 0;
  for (int i = 0; i < w * h; ++i)
    selected += px[3 * i] == std::lround(hit.r * 255) && px[3 * i + 1] == std::lround(hit.g * 255) && px[3 * i + 2] == std::lround(hit.b * 255);
  stbi_image_free(px);
  EXPECT_GT(selected, 0);
#endif
  // Max-pooled below the token count, and tiles at full detail.
  const RgbImage pooled = render_mask(mask, 7);
  EXPECT_EQ(pooled.width, 7);
  EXPECT_EQ(pooled.height, 7);
  const auto tiles = render_mask_tiles(mask, 8);
  EXPECT_EQ(tiles.size(), 3u * 3u);
  EXPECT_EQ(tiles.back().width, 4);
  EXPECT_EQ(tiles.back().height, 4);
}

TEST(Exports, HtmlReportIsSelfContainedWithFiguresAndMetrics) {
  const Capture& c = fixture();
  const std::string html = html_report(c);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const Figure& f : capture_figures(c)) EXPECT_NE(html.find("id=\"fig-" + f.name + "\""), std::string::npos) << f.name;
  EXPECT_NE(html.find("data:image/png;base64,iVBORw0KGgo"), std::string::npos);
  EXPECT_NE(html.find("<svg xmlns"), std::string::npos);
  EXPECT_NE(html.find("0.012300"), std::string::npos);                 // KL
  EXPECT_NE(html.find(">3.3201<"), std::string::npos);                 // exp(1.2): dense perplexity
  EXPECT_NE(html.find("speedup</th><td>not measured"), std::string::npos);  // the fixture ran on the CPU
  EXPECT_NE(html.find("@media print"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;model&gt; &amp; co"), std::string::npos);  // escaped names
}

TEST(Exports, FilesLandInTheirFolders) {
  hipstudio::testing::TempDir dir;
  const auto csv = write_csv_exports(fixture(), dir.file("csv"));
  EXPECT_EQ(csv.size(), 5u);
  const auto figures = write_figure_exports(fixture(), dir.file("png"));
  size_t vector_figures = 0;
  for (const Figure& f : capture_figures(fixture())) vector_figures += !f.png();
  EXPECT_EQ(figures.size(), capture_figures(fixture()).size() + vector_figures);  // a PDF beside each SVG
  const auto npy = write_npy_exports(fixture(), dir.file("npy"));
  EXPECT_TRUE(std::filesystem::exists(dir.file("npy/masks__L1__hip__blocks.npy")));
  EXPECT_GT(npy.size(), 40u);
  const NpyArray a = read_npy(dir.file("npy/masks__L1__hip__recall.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 10}));
}

TEST(Exports, ExportViewPicksOneFile) {
  const Capture& c = fixture();
  auto one = [&](const std::string& what, const std::string& format, int64_t layer = -1, int64_t head = -1) {
    ExportRequest r;
    r.what = what;
    r.format = format;
    r.layer = layer;
    r.head = head;
    return export_view(c, r);
  };
  const std::string blocks = one("mask", "npy", 1, 1);
  const NpyArray a = parse_npy(reinterpret_cast<const unsigned char*>(blocks.data()), blocks.size(), "blocks");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{10, 4}));
  EXPECT_TRUE(std::equal(a.data<int32_t>(), a.data<int32_t>() + 40, c.masks[1].hip.blocks.begin() + 40));
  EXPECT_EQ(one("mask", "png", 0, 0).substr(1, 3), "PNG");
  EXPECT_EQ(hipstudio::testing::xml_problem(one("locality", "svg", 1)), "");
  EXPECT_EQ(hipstudio::testing::xml_problem(one("hit-ratio", "svg")), "");
  EXPECT_EQ(one("metrics", "csv"), csv_layer_head_metrics(c));
  EXPECT_EQ(json::parse(one("metrics", "json"))["schema"], "hipstudio.analysis/1");
  ExportRequest r;
  r.what = "array";
  r.format = "npy";
  r.name = "methods/hip/quality";
  const std::string q = export_view(c, r);
  EXPECT_EQ(parse_npy(reinterpret_cast<const unsigned char*>(q.data()), q.size(), "q").shape, (std::vector<int64_t>{2, 2, 6}));
  EXPECT_EQ(hipstudio::testing::xml_problem(one("mask", "svg", 1, 1)), "");  // the vector mask figure
  EXPECT_THROW(one("mask", "csv"), InputError);
  EXPECT_THROW(one("mask", "npy", 5), InputError);
  EXPECT_THROW(one("mask", "npy", 0, 7), InputError);
  EXPECT_THROW(one("nonsense", "csv"), InputError);
}

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(base64("Man"), "TWFu");
  EXPECT_EQ(base64("Ma"), "TWE=");
  EXPECT_EQ(base64("M"), "TQ==");
}

}  // namespace
}  // namespace hipstudio::captures
