// Figures a paper can use: each names its run (model, device, dtype, T, parameters), a CPU latency
// figure and the report claim no speedup, charts honour the style, the hit-ratio legend's dashed
// line is drawn as a line, the mask legend says "dense tail" and marks dense layers, and every
// vector figure comes as a valid PDF too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "captures/export_view.h"
#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/hit_ratio_chart.h"
#include "captures/mask_png.h"
#include "captures/svg_plots.h"
#include "tests/captures/capture_fixture.h"
#include "viz/svg_pdf.h"

namespace hipstudio::captures {
namespace {

ExportRequest req(const std::string& what, const std::string& format, const std::string& style = "paper") {
  ExportRequest r;
  r.what = what, r.format = format, r.layer = 1, r.head = 0, r.style = style;
  return r;
}

const Capture& fixture() {
  static const Capture c = hipstudio::testing::synthetic_capture();
  return c;
}

// Checks the structure a PDF reader relies on: the header, every xref entry's offset pointing at
// "N 0 obj", startxref pointing at the xref table, %%EOF. "" when valid, else what is wrong.
std::string pdf_problem(const std::string& pdf) {
  if (pdf.rfind("%PDF-1.", 0) != 0) return "no %PDF header";
  const size_t sx = pdf.rfind("startxref\n");
  if (sx == std::string::npos) return "no startxref";
  const size_t xref = std::stoul(pdf.substr(sx + 10));
  if (pdf.compare(xref, 5, "xref\n") != 0) return "startxref does not point at the xref table";
  const size_t count_at = pdf.find('\n', xref + 5);
  const int n = std::stoi(pdf.substr(pdf.find(' ', xref + 5) + 1, count_at));
  for (int k = 1; k < n; ++k) {
    const size_t entry = count_at + 1 + 20 * static_cast<size_t>(k);
    const size_t off = std::stoul(pdf.substr(entry, 10));
    const std::string want = std::to_string(k) + " 0 obj";
    if (pdf.compare(off, want.size(), want) != 0) return "xref entry " + std::to_string(k) + " is off";
  }
  if (pdf.find("%%EOF") == std::string::npos) return "no %%EOF";
  // The content stream's /Length is its byte count.
  const size_t len_at = pdf.find("/Length ");
  const size_t len = std::stoul(pdf.substr(len_at + 8));
  const size_t body = pdf.find("stream\n", len_at) + 7;
  if (pdf.compare(body + len, 9, "endstream") != 0) return "the stream's /Length is wrong";
  return "";
}

// The strings a PDF content stream shows ("(...) Tj", escapes undone), in order.
std::vector<std::string> pdf_strings(const std::string& pdf) {
  std::vector<std::string> out;
  for (size_t at = pdf.find(" Tm ("); at != std::string::npos; at = pdf.find(" Tm (", at + 1)) {
    std::string text;
    size_t i = at + 5;
    for (; i < pdf.size() && pdf[i] != ')'; ++i) {
      if (pdf[i] == '\\') ++i;
      text += pdf[i];
    }
    if (pdf.compare(i, 4, ") Tj") == 0) out.push_back(text);
  }
  return out;
}

// The SVG's <text> contents that are plain ASCII without entities, in order.
std::vector<std::string> svg_plain_texts(const std::string& svg) {
  std::vector<std::string> out;
  const std::regex text("<text[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
    const std::string t = (*it)[1].str();
    if (std::all_of(t.begin(), t.end(), [](unsigned char ch) { return ch >= 32 && ch < 127 && ch != '&'; })) out.push_back(t);
  }
  return out;
}

TEST(ExportsFigures, EveryFigureNamesItsRun) {
  const Capture& c = fixture();
  const std::string context = figure_context(c);
  EXPECT_NE(context.find("synthetic <model> & co on cpu (1 threads), f32"), std::string::npos) << context;
  EXPECT_NE(context.find("T = " + std::to_string(c.analysis.prompt_ids.size()) + " tokens"), std::string::npos);
  EXPECT_NE(context.find("k " + std::to_string(c.analysis.options.hip.hip.k)), std::string::npos);
  for (const Figure& f : capture_figures(c)) {
    if (f.png()) continue;
    EXPECT_NE(f.bytes.find(xml_escape("synthetic <model> & co on cpu (1 threads)")), std::string::npos) << f.name;
  }
  EXPECT_NE(export_view(c, req("mask", "svg")).find(xml_escape("synthetic <model> & co on cpu")), std::string::npos);
}

TEST(ExportsFigures, CpuLatencyIsTheReferenceWithNoSpeedup) {
  const Capture& c = fixture();
  const std::string svg = export_view(c, req("latency", "svg"));
  EXPECT_NE(svg.find("float64 CPU reference"), std::string::npos);
  EXPECT_EQ(svg.find("speedup"), std::string::npos);
  const std::string html = html_report(c);
  EXPECT_EQ(html.find("speedup, prefill"), std::string::npos);
  EXPECT_NE(html.find("not measured"), std::string::npos);
  // On CUDA the report gives the ratio and the figure names the device.
  EXPECT_NE(svg_latency_bars(c.analysis, "cuda:0 (NVIDIA H200), bf16").find("Latency breakdown on cuda:0"), std::string::npos);
}

TEST(ExportsFigures, ChartsHonourTheStyle) {
  const Capture& c = fixture();
  const std::regex bg("<rect class=\"background\"[^>]*fill=\"(#[0-9a-f]{6})\"");
  for (const char* what : {"latency", "hit-ratio", "locality"}) {
    std::smatch m;
    const std::string paper = export_view(c, req(what, "svg", "paper"));
    const std::string dark = export_view(c, req(what, "svg", "dark"));
    ASSERT_TRUE(std::regex_search(paper, m, bg)) << what;
    EXPECT_EQ(m[1], viz::css_color(viz::paper_style().background)) << what;
    ASSERT_TRUE(std::regex_search(dark, m, bg)) << what;
    EXPECT_EQ(m[1], viz::css_color(viz::dark_style().background)) << what;
    EXPECT_EQ(dark.find("\"white\""), std::string::npos) << what;
  }
}

// Every colour a chart paints is its style's (background, text, axis, grid, series, mask palette):
// nothing is left at a fixed colour that reads on one background only, and a dark figure has no
// white in it. The figures of the report (capture_figures) and of export, in both styles.
TEST(ExportsFigures, EveryChartColourIsTheStyles) {
  const Capture& c = fixture();
  const std::regex colour("(?:fill|stroke)=\"(#[0-9a-f]{6}|white|black)\"");
  for (const viz::FigureStyle& style : {viz::paper_style(), viz::dark_style()}) {
    std::set<std::string> allowed;
    for (uint32_t v : {style.background, style.text, style.text_dim, style.axis, style.grid}) allowed.insert(viz::css_color(v));
    for (uint32_t v : style.series) allowed.insert(viz::css_color(v));
    const viz::MaskPalette& m = style.mask;
    for (uint32_t v : {m.future, m.empty, m.selected, m.hit, m.miss, m.false_pick, m.random, m.sink, m.dense, m.dense_layer})
      allowed.insert(viz::css_color(v));
    FigureOptions options;
    options.style = style.name;
    std::vector<std::pair<std::string, std::string>> svgs;
    for (const Figure& f : capture_figures(c, options))
      if (!f.png()) svgs.emplace_back(f.name, f.bytes);
    for (const char* what : {"latency", "hit-ratio", "locality", "iterations"}) svgs.emplace_back(what, export_view(c, req(what, "svg", style.name)));
    ASSERT_GE(svgs.size(), 6u);
    for (const auto& [name, svg] : svgs) {
      for (auto it = std::sregex_iterator(svg.begin(), svg.end(), colour); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(allowed.count((*it)[1])) << style.name << " " << name << ": " << (*it)[1];
      if (style.name == "dark") {
        EXPECT_EQ(svg.find("#ffffff"), std::string::npos) << name;
        EXPECT_EQ(svg.find("\"white\""), std::string::npos) << name;
      }
    }
  }
  // The two styles' series differ (each reads on its own background).
  EXPECT_NE(viz::paper_style().series, viz::dark_style().series);
}

// The exported hit-ratio figure is the chart the GUI's KV cache panel draws (hit_ratio_step_chart),
// and its legend names each context's series once, with its bank's slots.
TEST(ExportsFigures, HitRatioFigureIsTheChartThePanelDraws) {
  const Capture& c = fixture();
  const viz::Chart chart = hit_ratio_step_chart(c.offload);
  for (const viz::FigureStyle& style : {viz::paper_style(), viz::dark_style()})
    EXPECT_EQ(svg_hit_ratio_per_step(c.offload, style, "ctx"), viz::svg_chart(chart, style, "ctx")) << style.name;
  const std::vector<viz::ChartLegendEntry> legend = viz::chart_legend(chart);
  ASSERT_EQ(legend.size(), 2u);
  EXPECT_EQ(legend[0].name, "sparse attention (" + std::to_string(c.offload.sparse.bank_tokens) + ")");
  EXPECT_EQ(legend[1].name, "mask estimation (" + std::to_string(c.offload.mask.bank_tokens) + ")");
  EXPECT_TRUE(legend[1].dashed);
  EXPECT_FALSE(legend[0].dashed);
}

TEST(ExportsFigures, HitRatioDashedSeriesIsALine) {
  const std::string svg = svg_hit_ratio_per_step(fixture().offload);
  const size_t sparse = svg.find("<g class=\"series\">"), mask = svg.find("<g class=\"series\">", sparse + 1);
  ASSERT_NE(mask, std::string::npos);
  const std::string second = svg.substr(mask, svg.find("</g>", mask) - mask);
  // The dashed polyline joins the steps that read: more than one point, so the dashes show.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(second, m, std::regex("stroke-dasharray=\"6 4\" points=\"([^\"]*)\"")));
  EXPECT_GE(std::count(m[1].first, m[1].second, ','), 2);
  // The legend's sample of it: a dashed line with a ring marker.
  const std::string legend = svg.substr(svg.find("<g class=\"legend\">"));
  EXPECT_NE(legend.find("stroke-dasharray=\"6 4\""), std::string::npos);
  EXPECT_NE(legend.find("<circle"), std::string::npos);
}

TEST(ExportsFigures, MaskLegendSaysDenseTailAndMarksDenseLayers) {
  const Capture& c = fixture();
  for (const auto& [label, color] : mask_legend(viz::light_mask_palette())) EXPECT_NE(label, "window");
  const MaskExport mask = mask_export(c.masks.at(0), c.analysis.options.hip.hip, static_cast<int64_t>(c.analysis.prompt_ids.size()), 0);
  const int64_t ld = c.analysis.options.hip.dense_layers;
  const viz::MaskFigureText hip_layer = mask_figure_text(mask, c.analysis, ld, 0);
  bool tail = false, dense = false;
  for (const auto& [label, color] : hip_layer.legend) tail |= label == "dense tail", dense |= label.rfind("dense layer", 0) == 0;
  EXPECT_TRUE(tail);
  EXPECT_FALSE(dense);
  EXPECT_EQ(hip_layer.frame, 0u);
  if (ld > 0) {
    const viz::MaskFigureText d = mask_figure_text(mask, c.analysis, 0, 0);
    EXPECT_EQ(d.frame, mask.palette.dense_layer);
  }
  // A layer below l_d, forced here: the legend gains the entry and the frame its colour.
  PairedAnalysis a = c.analysis;
  a.options.hip.dense_layers = 2;
  a.layers[1].dense = true;  // as the analysis marks it under that l_d
  const viz::MaskFigureText d = mask_figure_text(mask, a, 1, 0);
  bool listed = false;
  for (const auto& [label, color] : d.legend) listed |= label.rfind("dense layer (frame): dense", 0) == 0 && color == mask.palette.dense_layer;
  EXPECT_TRUE(listed);
  EXPECT_EQ(d.frame, mask.palette.dense_layer);
  EXPECT_NE(svg_mask_figure(mask, d, viz::paper_style()).find(viz::css_color(mask.palette.dense_layer) + "\" stroke-width=\"3\""),
            std::string::npos);
}

TEST(ExportsFigures, PdfNextToEverySvg) {
  const Capture& c = fixture();
  for (const char* what : {"mask", "latency", "hit-ratio", "locality"}) {
    const std::string pdf = export_view(c, req(what, "pdf"));
    EXPECT_EQ(pdf_problem(pdf), "") << what;
    EXPECT_NE(pdf.find("/BaseFont /Helvetica"), std::string::npos);
    // The PDF shows the SVG's text: every plain label, in the SVG's order (titles, context, ticks).
    const std::vector<std::string> shown = pdf_strings(pdf);
    const std::vector<std::string> labels = svg_plain_texts(export_view(c, req(what, "svg")));
    ASSERT_GE(labels.size(), 3u) << what;
    size_t next = 0;
    for (const std::string& label : labels) {
      const auto found = std::find(shown.begin() + static_cast<std::ptrdiff_t>(next), shown.end(), label);
      ASSERT_NE(found, shown.end()) << what << ": '" << label << "' is not in the PDF";
      next = static_cast<size_t>(found - shown.begin()) + 1;
    }
    // The run's context, in the lines the SVG wraps it into.
    std::string joined;
    for (const std::string& t : shown) joined += t + " ";
    // (The mask figure's subtitle words its parameters its own way, after the same run.)
    const std::string context = std::string(what) == "mask" ? figure_run(c) : figure_context(c);
    EXPECT_NE(joined.find(context), std::string::npos) << what << " lacks its run's context: " << joined;
  }
  // Text and its position: the title centred, as in the SVG.
  const std::string pdf = viz::svg_to_pdf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"100\"><rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"
      "<text x=\"100\" y=\"20\" text-anchor=\"middle\" font-size=\"10\">a (b)</text><line x1=\"0\" y1=\"0\" x2=\"10\" y2=\"10\" stroke=\"#000000\"/></svg>");
  EXPECT_EQ(pdf_problem(pdf), "");
  EXPECT_NE(pdf.find("/MediaBox [0 0 200 100]"), std::string::npos);
  EXPECT_NE(pdf.find("(a \\(b\\)) Tj"), std::string::npos);
  const double w = viz::helvetica_width("a (b)", 10);
  EXPECT_NE(pdf.find("1 0 0 -1 " + std::to_string(100 - w / 2).substr(0, 5)), std::string::npos) << pdf;
  EXPECT_THROW(viz::svg_to_pdf("<html/>"), std::invalid_argument);
  // write_figure_exports: a PDF beside each SVG, or one figure alone.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hipstudio_exports_figures_test";
  std::filesystem::remove_all(dir);
  FigureOptions only;
  only.only = "latency";
  const std::vector<std::string> paths = write_figure_exports(c, dir.string(), only);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(std::filesystem::path(paths[1]).filename(), "latency.pdf");
  // A file name writes that file alone, and it is the PDF export_view gives.
  only.only = "latency.pdf";
  const std::vector<std::string> one = write_figure_exports(c, dir.string(), only);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(std::filesystem::path(one[0]).filename(), "latency.pdf");
  std::FILE* f = std::fopen(one[0].c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string bytes;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
  std::fclose(f);
  EXPECT_EQ(bytes, export_view(c, req("latency", "pdf")));
  only.only = "nothing";
  try {
    write_figure_exports(c, dir.string(), only);
    ADD_FAILURE() << "no figure 'nothing' was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("latency.pdf"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hipstudio::captures
