// A paired run of a model whose windowed and soft-capped layers interleave (the Gemma 2 fixture:
// layers 0 and 2 slide, 1 and 3 are full, scale query_pre_attn_scalar^-1/2, attention soft-cap):
// each layer's quality carries its maths, the windowed layers' numbers are NaN, the access streams
// name the layers HiP replaced (1 and 3 with l_d 0: not a run from a first layer), the offloading
// simulator labels its layers by them, and a capture stores and reads all of it back.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "captures/capture.h"
#include "captures/content_hash.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "engine/analysis/layer_views_backend.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/model/layer_math.h"
#include "engine/offload/offload_simulator.h"
#include "tests/engine/arch_fixture_cases.h"
#include "tests/engine/paired_capture_fixture.h"

namespace hipstudio {
namespace {

TEST(WindowedAnalysis, LayersCarryTheirMathsAndTheStreamsNameTheHipLayers) {
  const testing::ArchFixture f = testing::read_arch_fixture("gemma2");
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  const ModelConfig& c = model->config;
  AnalysisOptions o = testing::paired_test_options(3);
  o.hip.dense_layers = 0;
  PairedAnalysis a = run_paired_analysis(model, "Once upon a time, there was a little girl named Lily. She loved to play.", o);
  ASSERT_EQ(a.layers.size(), static_cast<size_t>(c.n_layers));

  std::vector<int64_t> replaced;
  bool saw_window = false, saw_cap = false;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerQuality& q = a.layers[static_cast<size_t>(l)];
    const ViewsMath expected = views_math(layer_attention_math(c, l));
    EXPECT_TRUE(q.math == expected) << "layer " << l;
    const bool hip = hip_replaces_layer(c, o.hip.dense_layers, l);
    if (hip) replaced.push_back(l);
    EXPECT_EQ(q.dense, !hip) << "layer " << l;
    saw_window = saw_window || expected.windowed();
    saw_cap = saw_cap || expected.score.softcap > 0.0;
    ASSERT_EQ(q.heads.size(), static_cast<size_t>(c.n_heads)) << "layer " << l;
    for (const HeadQuality& h : q.heads) {
      EXPECT_EQ(std::isnan(h.mass), expected.windowed()) << "layer " << l;
      EXPECT_EQ(std::isnan(h.out_rel_err), expected.windowed()) << "layer " << l;
    }
  }
  ASSERT_TRUE(saw_window && saw_cap) << "the fixture no longer mixes windowed and capped layers";
  ASSERT_EQ(replaced, (std::vector<int64_t>{1, 3})) << "the case needs HiP layers that are not contiguous";

  EXPECT_EQ(a.access.hip_layers, replaced);
  EXPECT_EQ(a.access.first_layer, 1);
  EXPECT_EQ(a.access.layers, 2);
  offload::OffloadConfig oc;
  oc.k = o.hip.hip.k;
  oc.b_sk = o.hip.hip.b_sk;
  oc.context_tokens = static_cast<int64_t>(a.prompt_ids.size()) + o.decode_steps;
  const offload::OffloadResult r = offload::simulate_offloading(a.access, oc);
  EXPECT_EQ(r.hip_layers, replaced);
  EXPECT_EQ(offload::hip_layer_index(a.access, 2), -1) << "layer 2 slides: HiP read nothing there";
  EXPECT_EQ(offload::hip_layer_index(a.access, 3), 1);

  const testing::PairedCapture run = testing::capture_mask_views(std::move(a), "gemma2 fixture", c.architecture, "prompt");
  const PairedAnalysis& kept = run.kept;
  const captures::CaptureInfo& info = run.info;
  const captures::CaptureRequest& request = run.request;
  const captures::Capture& back = run.back;
  ASSERT_EQ(back.analysis.layers.size(), kept.layers.size());
  for (size_t l = 0; l < kept.layers.size(); ++l) EXPECT_TRUE(back.analysis.layers[l].math == kept.layers[l].math) << "layer " << l;
  EXPECT_EQ(back.analysis.access.hip_layers, replaced);
  for (const LayerMaskViews& m : back.masks) EXPECT_TRUE(m.math == kept.layers[static_cast<size_t>(m.layer)].math) << m.layer;

  // A capture written without the per-layer maths: refused for this architecture (its layers
  // window and cap), read with plain maths for one whose every layer is plain.
  auto without_layer_math = [&](const std::string& architecture) {
    captures::CaptureInfo i = info;
    i.run.architecture = architecture;
    std::vector<captures::ZipEntry> entries =
        captures::zip_decode(captures::encode_capture(captures::build_capture(PairedAnalysis(kept), i, request, nullptr)), "t");
    for (captures::ZipEntry& e : entries) {
      if (e.name != "manifest.json") continue;
      nlohmann::json m = nlohmann::json::parse(e.data);
      m["arrays"].erase("analysis/layer_math.npy");
      e.data = m.dump(1);
    }
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [](const captures::ZipEntry& e) { return e.name == "analysis/layer_math.npy"; }),
                  entries.end());
    captures::rehash_capture_manifest(entries);
    return captures::zip_encode(entries);
  };
  try {
    captures::decode_capture(without_layer_math(c.architecture), "old.hipcap");
    ADD_FAILURE() << "a Gemma 2 capture without analysis/layer_math was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("analysis/layer_math"), std::string::npos) << e.what();
  }
  // (The invariants then hold only if no layer was windowed: this analysis has windowed layers, so a
  // plain architecture's reading fails on them, which names the layer marks rather than the maths.)
  try {
    captures::decode_capture(without_layer_math("LlamaForCausalLM"), "old.hipcap");
    ADD_FAILURE() << "a capture whose layer marks need windows was read as plain";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find("analysis/layer_math is missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hipstudio
