// Each layer's kind (window W / dense under l_d / HiP) and "l_d N of M full-attention layers", as
// the figures, the report and the GUI show them, for a windowed model (Gemma 2's alternation) and
// one without windows. The dense flags below are what the engine's rule gives (docs/MODELS.md: a
// windowed layer keeps its window; the first l_d full-attention layers stay dense; HiP replaces the
// later full-attention ones), written out by hand for each config.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/layer_kinds.h"
#include "captures/mask_png.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::captures {
namespace {

PairedAnalysis with_dense(std::vector<bool> dense, int64_t l_d, std::vector<int64_t> windows = {}) {
  PairedAnalysis a;
  a.options.hip.dense_layers = l_d;
  for (size_t l = 0; l < dense.size(); ++l) {
    LayerQuality q;
    q.layer = static_cast<int64_t>(l);
    q.dense = dense[l];
    if (!windows.empty()) q.math.window = windows[l];
    a.layers.push_back(q);
  }
  return a;
}

TEST(LayerKinds, WindowedModelNamesEveryKind) {
  // Windows W, full, W, full, full, full; l_d 1: layer 1 is the first full-attention layer (dense),
  // 3-5 are HiP's, 0 and 2 keep their window.
  const std::vector<int64_t> windows{4096, 0, 4096, 0, 0, 0};
  const LayerKinds k = layer_kinds(with_dense({true, true, true, false, false, false}, 1, windows));
  ASSERT_EQ(k.layers(), 6);
  EXPECT_EQ(k.at(0), LayerKind::kWindow);
  EXPECT_EQ(k.at(1), LayerKind::kDense);
  EXPECT_EQ(k.at(2), LayerKind::kWindow);
  for (int64_t l = 3; l < 6; ++l) EXPECT_EQ(k.at(l), LayerKind::kHip) << l;
  EXPECT_EQ(k.text(0), "window 4096 (dense on both sides)");
  EXPECT_EQ(k.text(1), "dense (under l_d)");
  EXPECT_EQ(k.text(3), "HiP");
  EXPECT_EQ(k.short_text(2), "window 4096");
  EXPECT_EQ(k.dense_layers_text(), "l_d 1 of 4 full-attention layers");
  EXPECT_EQ(k.summary(), "HiP: 3-5 (3 of 6 layers); window 4096 (dense on both sides): 0, 2; dense (under l_d): 1");
  // l_d 0 on it: only the windowed layers are dense.
  const LayerKinds z = layer_kinds(with_dense({true, false, true, false, false, false}, 0, windows));
  EXPECT_EQ(z.summary(), "HiP: 1, 3-5 (4 of 6 layers); window 4096 (dense on both sides): 0, 2");
  EXPECT_EQ(z.dense_layers_text(), "l_d 0 of 4 full-attention layers");
}

TEST(LayerKinds, ModelWithoutWindows) {
  const LayerKinds k = layer_kinds(with_dense({true, true, false, false}, 2));
  EXPECT_EQ(k.at(0), LayerKind::kDense);
  EXPECT_EQ(k.at(2), LayerKind::kHip);
  EXPECT_EQ(k.dense_layers_text(), "l_d 2 of 4 full-attention layers");
  EXPECT_EQ(k.summary(), "HiP: 2-3 (2 of 4 layers); dense (under l_d): 0-1");
  // l_d at least the layer count: every layer dense.
  const LayerKinds all = layer_kinds(with_dense({true, true}, 5));
  EXPECT_EQ(all.at(0), LayerKind::kDense);
  EXPECT_EQ(all.summary(), "HiP: none; dense (under l_d): 0-1");
}

TEST(LayerKinds, ReportAndMaskFigureMarkAWindowedLayer) {
  // The fixture's 2 layers as a model whose layer 0 has a 16-token window, l_d 0: layer 0 keeps its
  // window, layer 1 is HiP's.
  Capture c = hipstudio::testing::synthetic_capture();
  c.analysis.options.hip.dense_layers = 0;
  c.analysis.layers[0].dense = true;
  c.analysis.layers[1].dense = false;
  c.analysis.layers[0].math.window = 16;
  const std::string html = html_report(c);
  EXPECT_NE(html.find("<td>window 16 (dense on both sides)</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>HiP</td>"), std::string::npos);
  EXPECT_NE(html.find("l_d 0 of 1 full-attention layers"), std::string::npos);
  EXPECT_NE(html.find("HiP: 1 (1 of 2 layers); window 16 (dense on both sides): 0"), std::string::npos);
  EXPECT_NE(figure_context(c).find("l_d 0 of 1 full-attention layers"), std::string::npos);
  const MaskExport mask = mask_export(c.masks.at(0), c.analysis.options.hip.hip, static_cast<int64_t>(c.analysis.prompt_ids.size()), 0);
  const viz::MaskFigureText w = mask_figure_text(mask, c.analysis, 0, 0);
  EXPECT_EQ(w.title, "HiP mask, layer 0, head 0 (window 16 layer: what HiP would pick)");
  bool listed = false;
  for (const auto& [label, color] : w.legend) listed |= label == "dense layer (frame): window 16 (dense on both sides)";
  EXPECT_TRUE(listed);
  EXPECT_EQ(w.frame, mask.palette.dense_layer);
  const viz::MaskFigureText h = mask_figure_text(mask, c.analysis, 1, 0);
  EXPECT_EQ(h.title, "HiP mask, layer 1, head 0");
  EXPECT_NE(h.subtitle.find("l_d 0 of 1 full-attention layers"), std::string::npos) << h.subtitle;
  EXPECT_EQ(h.frame, 0u);
  // The capture's own run (layer 0 under l_d 1, no windows).
  const Capture plain = hipstudio::testing::synthetic_capture();
  EXPECT_NE(html_report(plain).find("<td>dense (under l_d)</td>"), std::string::npos);
  EXPECT_NE(html_report(plain).find("l_d 1 of 2 full-attention layers"), std::string::npos);
}

}  // namespace
}  // namespace hipstudio::captures
