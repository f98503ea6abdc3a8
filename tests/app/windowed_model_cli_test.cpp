// `analyze` on an architecture whose layers differ (Gemma 2's fixture: sliding-window layers 0 and 2
// alternate with full-attention layers 1 and 3, attention soft-cap 5, query_pre_attn_scalar 24): the
// JSON states each layer's attention as the forward pass ran it, windowed layers carry no HiP
// numbers, and l_d counts the full-attention layers only.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/run_hipstudio.h"

namespace {

using hipstudio::testing::CommandResult;
using hipstudio::testing::run_hipstudio;

const std::string kGemma2 = std::string(HIPSTUDIO_SOURCE_DIR) + "/tests/fixtures/archs/gemma2";
const char* kPrompt = "'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.'";

std::string analyze_args(int dense_layers, const std::string& json) {
  return "analyze --model " + kGemma2 + " --prompt " + kPrompt + " --topk 8 --bq 4 --bk 2 --ld " + std::to_string(dense_layers) +
         " --rm 2 --decode 3 --json " + json;
}

TEST(WindowedModelCli, AnalyzeJsonNamesEachLayersAttentionAndLeavesWindowedLayersUnscored) {
  const auto path = std::filesystem::temp_directory_path() / "hipstudio-windowed-analyze.json";
  std::filesystem::remove(path);
  const CommandResult r = run_hipstudio(analyze_args(1, path.string()), /*merge_stderr=*/true);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  const nlohmann::json& layers = j["layers"];
  ASSERT_EQ(layers.size(), 4u);
  for (int l = 0; l < 4; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const nlohmann::json& a = layers[l]["attention"];
    const bool windowed = l % 2 == 0;
    EXPECT_EQ(a["window"].get<int64_t>(), windowed ? 24 : 0);
    EXPECT_NEAR(a["scale"].get<double>(), 1.0 / std::sqrt(24.0), 1e-12);
    EXPECT_DOUBLE_EQ(a["softcap"].get<double>(), 5.0);
    // Dense: both windowed layers, and the first full-attention layer (l_d 1); HiP replaces layer 3.
    EXPECT_EQ(layers[l]["dense"].get<bool>(), l != 3);
    const nlohmann::json& recall = layers[l]["heads"][0]["recall"];
    EXPECT_EQ(recall.is_null(), windowed) << recall;
  }
  std::filesystem::remove(path);
}

TEST(WindowedModelCli, DenseLayersAreBoundedByTheFullAttentionLayers) {
  const auto path = std::filesystem::temp_directory_path() / "hipstudio-windowed-refused.json";
  std::filesystem::remove(path);
  // Two full-attention layers of four: l_d 2 would leave HiP nothing to replace.
  const CommandResult r = run_hipstudio(analyze_args(2, path.string()), /*merge_stderr=*/true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("error: --ld 2 is out of range: give a value from 0 to 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 full-attention layers of its 4"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
