// `hipstudio mask --methods`: every listed method's files against the registry's CPU reference
// called directly on the same .npy inputs, HiP's outputs unchanged by the list, and bad method
// names and parameters refused (exit 2, `error:` naming the valid ones) before any output exists.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/npy.h"
#include "engine/formats/remove_tree.h"
#include "kernels/methods/selection_method.h"
#include "tests/app/run_hipstudio.h"

namespace {

using hipstudio::testing::CommandResult;
using hipstudio::testing::run_hipstudio;
namespace hm = hipstudio::hip::methods;
namespace fs = std::filesystem;

// Q (4 heads, GQA over 2 KV heads), K, V: T 96, d 8, deterministic and ragged enough that every
// method's choice differs from the others'.
struct MaskInputs {
  static constexpr int64_t hq = 4, hkv = 2, t = 96, d = 8;
  fs::path dir;
  std::vector<float> q, k, v;
  explicit MaskInputs(const std::string& name) : dir(fs::temp_directory_path() / name) {
    hipstudio::remove_tree(dir.string());
    fs::create_directories(dir);
    q.resize(hq * t * d), k.resize(hkv * t * d), v.resize(hkv * t * d);
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(std::sin(0.37 * i) + 0.3 * std::cos(0.013 * i * i));
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = static_cast<float>(std::cos(0.11 * i) * (1.0 + 0.5 * std::sin(0.007 * i)));
      v[i] = static_cast<float>(std::sin(0.05 * i + 1));
    }
    hipstudio::captures::write_npy((dir / "q.npy").string(), {hq, t, d}, q);
    hipstudio::captures::write_npy((dir / "k.npy").string(), {hkv, t, d}, k);
    hipstudio::captures::write_npy((dir / "v.npy").string(), {hkv, t, d}, v);
  }
  ~MaskInputs() { hipstudio::remove_tree(dir.string()); }
  std::string args(const std::string& out) const {
    return "mask --q " + (dir / "q.npy").string() + " --k " + (dir / "k.npy").string() + " --v " +
           (dir / "v.npy").string() + " --topk 16 --bq 4 --bk 2 --sink 2 --window 4 --out " + (dir / out).string();
  }
  hipstudio::hip::AttentionInputs view() const {
    hipstudio::hip::AttentionInputs in;
    in.q = q.data(), in.k = k.data(), in.v = v.data();
    in.hq = hq, in.hkv = hkv, in.tq = t, in.tk = t, in.d = d;
    return in;
  }
};

std::vector<char> file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

// The run's HipParams as metrics.json states them.
hipstudio::hip::HipParams params_of(const nlohmann::json& j) {
  hipstudio::hip::HipParams p;
  const auto& q = j["params"];
  p.k = q["k"], p.b_q = q["b_q"], p.b_k = q["b_k"], p.b_sq = q["b_sq"], p.b_sk = q["b_sk"];
  p.sink = q["sink"], p.window = q["window"], p.rho = q["rho"], p.causal = q["causal"];
  return p;
}

TEST(MaskMethods, EveryListedMethodWritesTheRegistryReferencesMask) {
  const MaskInputs in("hipstudio-mask-methods");
  const CommandResult plain = run_hipstudio(in.args("plain"), true);
  ASSERT_EQ(plain.status, 0) << plain.out;
  const CommandResult r = run_hipstudio(
      in.args("all") + " --methods hip,streaming,quest,vslash,oracle,random --quest-page 4 --vslash-vertical-share 0.25",
      true);
  ASSERT_EQ(r.status, 0) << r.out;

  // HiP's, the oracle's and the random baseline's files are those of a run without --methods.
  for (const char* name : {"mask.npy", "oracle_mask.npy", "random_mask.npy", "dense_from.npy", "out.npy", "dense_out.npy"})
    EXPECT_EQ(file_bytes(in.dir / "all" / name), file_bytes(in.dir / "plain" / name)) << name;
  const nlohmann::json plain_json = read_json(in.dir / "plain" / "metrics.json");
  const nlohmann::json j = read_json(in.dir / "all" / "metrics.json");
  for (const char* name : {"hip", "random", "oracle"}) EXPECT_EQ(j[name], plain_json[name]) << name;
  EXPECT_FALSE(plain_json.contains("streaming"));

  const hipstudio::hip::HipParams p = params_of(j);
  const std::vector<std::pair<std::string, hm::MethodValues>> listed = {
      {"hip", {}}, {"streaming", {}}, {"quest", {{"quest_page", 4.0}}}, {"vslash", {{"vslash_vertical_share", 0.25}}},
      {"oracle", {}}, {"random", {{"random_seed", 0.0}}}};  // mask's random baseline: --seed, default 0
  for (const auto& [name, given] : listed) {
    const hm::SelectionMethod& method = hm::find_selection_method(name);
    hm::SelectionContext ctx;
    ctx.hip = p;
    ctx.values = hm::resolve_values(method, given, p);
    const hipstudio::hip::MaskResult want = hm::select_masks(method, in.view(), ctx);
    const std::string mask_file = name == "hip" ? "mask.npy" : name + "_mask.npy";
    const std::string dense_file = name == "hip" ? "dense_from.npy" : name + "_dense_from.npy";
    const auto mask = hipstudio::captures::read_npy((in.dir / "all" / mask_file).string());
    ASSERT_EQ(mask.shape, (std::vector<int64_t>{want.heads, want.query_blocks, want.kb})) << name;
    EXPECT_EQ(std::vector<int32_t>(mask.data<int32_t>(), mask.data<int32_t>() + mask.numel()), want.blocks) << name;
    const auto dense = hipstudio::captures::read_npy((in.dir / "all" / dense_file).string());
    ASSERT_EQ(dense.numel(), want.query_blocks) << name;
    EXPECT_EQ(std::vector<int64_t>(dense.data<int64_t>(), dense.data<int64_t>() + dense.numel()), want.dense_from)
        << name;
    // Each method's metrics, keyed by its name, with one value per head.
    ASSERT_TRUE(j.contains(name)) << name;
    for (const char* key : {"recall_per_head", "mass_per_head", "output_error_per_head"})
      EXPECT_EQ(j[name][key].size(), static_cast<size_t>(MaskInputs::hq)) << name << " " << key;
  }
  EXPECT_EQ(j["quest"]["params"]["quest_page"], 4.0);
  EXPECT_EQ(j["vslash"]["params"]["vslash_vertical_share"], 0.25);
  // The methods are compared, not copies of one another.
  EXPECT_NE(file_bytes(in.dir / "all" / "streaming_mask.npy"), file_bytes(in.dir / "all" / "mask.npy"));
  EXPECT_NE(r.out.find("vslash"), std::string::npos) << r.out;
}

TEST(MaskMethods, BadMethodsAndParametersAreRefusedBeforeAnyOutput) {
  const MaskInputs in("hipstudio-mask-methods-bad");
  const struct {
    std::string extra, message;
  } cases[] = {
      {"--methods hip,h2o", "valid: hip, oracle, random, streaming, quest, vslash"},
      {"--methods hip,hip", "listed twice"},
      {"--methods ''", "empty method name"},
      {"--methods hip, ", "empty method name"},
      {"--quest-page 4", "--quest-page is a parameter of method quest, which --methods (hip) does not list"},
      {"--methods quest --quest-page 3", "multiple of b_k"},
      {"--methods quest --quest-page 0", "--quest-page"},
      {"--methods vslash --vslash-vertical-share 1.5", "--vslash-vertical-share"},
      {"--methods vslash --vslash-vertical-share x", "--vslash-vertical-share"},
      {"--random-seed 3", "--random-seed"},  // random's seed is --seed in mask
  };
  for (const auto& c : cases) {
    const CommandResult r = run_hipstudio(in.args("out") + " " + c.extra, true);
    EXPECT_EQ(r.status, 2) << c.extra << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("error:", 0), 0u) << c.extra << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.extra << "\n" << r.out;
    EXPECT_FALSE(fs::exists(in.dir / "out")) << c.extra;
  }
}

}  // namespace
