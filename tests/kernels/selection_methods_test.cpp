// The selection-method registry (kernels/methods/): each new method's CPU reference against the
// brute-force rule of selection_method_brute.h on random inputs of several shapes (T not a
// multiple of the blocks, sink and window, k beyond the range, GQA, given positions, non-causal),
// decode refreshes, the registry's names and refusals, and HiP's, the oracle's and the random
// baseline's entries against the functions they wrap.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/methods/fixed_order_f64.h"
#include "kernels/methods/selection_method.h"
#include "kernels/methods/vslash.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "tests/kernels/hip_test_inputs.h"
#include "tests/kernels/selection_method_brute.h"
#include "tests/kernels/selection_method_cases.h"

namespace hipstudio::hip {
namespace {

using methods::SelectionContext;
using testing::BruteMask;

using Shape = testing::SelectionShape;
std::vector<Shape> shapes() { return testing::selection_shapes(); }
testing::OwnedInputs make_inputs(const Shape& s, uint64_t seed) { return testing::selection_inputs(s, seed); }
HipParams params_of(const Shape& s) { return testing::selection_params(s); }
SelectionContext context(const std::string& method, const HipParams& p, const methods::MethodValues& given = {}) {
  return testing::selection_context(method, p, given);
}

void expect_mask(const MaskResult& m, const BruteMask& want, const AttentionInputs& in, const HipParams& p,
                 int64_t b, const std::string& what) {
  ASSERT_EQ(m.heads, in.hq) << what;
  ASSERT_EQ(m.kb, p.k / p.b_k) << what;
  ASSERT_EQ(m.query_blocks, static_cast<int64_t>(want[0].size())) << what;
  for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
    EXPECT_EQ(m.dense_from[qb], testing::brute_range(in, p, b, qb).dense_from) << what << " qb " << qb;
    for (int64_t h = 0; h < m.heads; ++h) {
      const std::vector<int32_t>& w = want[h][qb];
      ASSERT_EQ(m.count(h, qb), static_cast<int32_t>(w.size())) << what << " h " << h << " qb " << qb;
      for (int64_t j = 0; j < m.kb; ++j)
        ASSERT_EQ(m.row(h, qb)[j], j < static_cast<int64_t>(w.size()) ? w[j] : -1) << what << " h " << h << " qb " << qb;
    }
  }
}

TEST(SelectionMethods, RegistryListsTheMethodsInOrder) {
  const std::vector<std::string> want = {"hip", "oracle", "random", "streaming", "quest", "vslash"};
  EXPECT_EQ(methods::selection_method_names(), want);
  EXPECT_EQ(methods::selection_method_list(), "hip, oracle, random, streaming, quest, vslash");
  for (const methods::SelectionMethod* m : methods::selection_methods()) {
    EXPECT_FALSE(m->title.empty() || m->citation.empty() || m->rule.empty()) << m->name;
    EXPECT_NE(m->reference, nullptr) << m->name;
    EXPECT_NE(m->block_tokens, nullptr) << m->name;
  }
  const methods::SelectionMethod& quest = methods::find_selection_method("quest");
  ASSERT_EQ(quest.params.size(), 1u);
  EXPECT_EQ(methods::method_param_flag(quest.params[0]), "--quest-page");
  EXPECT_EQ(quest.params[0].fallback, 16.0);
  EXPECT_EQ(methods::method_param_flag(methods::find_selection_method("vslash").params[0]), "--vslash-vertical-share");
}

TEST(SelectionMethods, RefusesBadNamesAndParametersNamingTheValidOnes) {
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const methods::MethodError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { methods::find_selection_method("h2o"); }),
            "unknown selection method 'h2o' (valid: hip, oracle, random, streaming, quest, vslash)");
  EXPECT_NE(message([] { methods::parse_method_list("hip,,quest"); }).find("valid: hip, oracle"), std::string::npos);
  EXPECT_NE(message([] { methods::parse_method_list("hip,quest,hip"); }).find("twice"), std::string::npos);
  EXPECT_NE(message([] { methods::parse_method_list("hip,"); }).find("empty"), std::string::npos);
  const std::vector<const methods::SelectionMethod*> list = methods::parse_method_list("hip,streaming,quest,vslash");
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[2]->name, "quest");

  const HipParams p;  // k 512, b_k 2
  const methods::SelectionMethod& quest = methods::find_selection_method("quest");
  EXPECT_NE(message([&] { methods::resolve_values(quest, {{"page", 16}}, p); }).find("(valid: quest_page)"),
            std::string::npos);
  EXPECT_NE(message([&] { methods::resolve_values(quest, {{"quest_page", 0}}, p); }).find("must be in [1, 4096]"),
            std::string::npos);
  EXPECT_NE(message([&] { methods::resolve_values(quest, {{"quest_page", 7.5}}, p); }).find("integer"),
            std::string::npos);
  EXPECT_NE(message([&] { methods::resolve_values(quest, {{"quest_page", 7}}, p); }).find("multiple of b_k"),
            std::string::npos);
  EXPECT_NE(message([&] { methods::resolve_values(quest, {{"quest_page", 24}}, p); })
                .find("k (512) must be a multiple of quest_page (24)"),
            std::string::npos);
  EXPECT_NE(message([&] { methods::resolve_values(methods::find_selection_method("streaming"), {{"x", 1}}, p); })
                .find("(valid: none)"),
            std::string::npos);
  EXPECT_NE(message([&] {
              methods::resolve_values(methods::find_selection_method("vslash"), {{"vslash_vertical_share", NAN}}, p);
            }).find("must be in [0, 1]"),
            std::string::npos);
  EXPECT_EQ(methods::resolve_values(quest, {}, p).at("quest_page"), 16.0);

  // Incomplete values at the entry points, and a stateful method's decode without its state.
  const testing::OwnedInputs o = testing::random_inputs(1, 1, 8, 8, 4, 1);
  SelectionContext ctx;
  ctx.hip.k = 16, ctx.hip.b_q = 4;
  EXPECT_NE(message([&] { methods::select_masks(quest, o.view(false), ctx); }).find("resolve_values"),
            std::string::npos);
  ctx.values = methods::default_values(methods::find_selection_method("vslash"));
  EXPECT_NE(message([&] {
              methods::select_for_decode(methods::find_selection_method("vslash"), o.view(false), ctx, nullptr);
            }).find("decode_state"),
            std::string::npos);
}

TEST(SelectionMethods, BaselineEntriesGiveTheWrappedFunctionsMasks) {
  for (const Shape& s : shapes()) {
    const testing::OwnedInputs o = make_inputs(s, 11);
    const AttentionInputs in = o.view(false);
    const HipParams p = params_of(s);
    auto same = [&](const MaskResult& a, const MaskResult& b, const char* what) {
      EXPECT_EQ(a.blocks, b.blocks) << s.name << " " << what;
      EXPECT_EQ(a.counts, b.counts) << s.name << " " << what;
      EXPECT_EQ(a.dense_from, b.dense_from) << s.name << " " << what;
      EXPECT_EQ(a.iterations, b.iterations) << s.name << " " << what;
      EXPECT_EQ(a.branches, b.branches) << s.name << " " << what;
    };
    same(methods::select_masks(methods::find_selection_method("hip"), in, context("hip", p)),
         estimate_masks_reference(in, p).mask, "hip");
    same(methods::select_masks(methods::find_selection_method("oracle"), in, context("oracle", p)),
         oracle_masks(in, p), "oracle");
    SelectionContext ctx = context("random", p, {{"random_seed", 7}});
    ctx.layer = 3;
    same(methods::select_masks(methods::find_selection_method("random"), in, ctx), random_masks(in, p, 10), "random");
  }
}

TEST(SelectionMethods, FixedOrderExpMatchesStdExp) {
  for (double x = -707.5; x <= 0.0; x += 0.37) {
    const double want = std::exp(x);
    EXPECT_LE(std::abs(methods::exp_f64(x) - want), 2e-15 * want) << x;
  }
  EXPECT_EQ(methods::exp_f64(0.0), 1.0);
  EXPECT_EQ(methods::exp_f64(-709.0), 0.0);
  EXPECT_EQ(methods::exp_f64(-INFINITY), 0.0);
  std::vector<double> v = {1, 2, 3, 4, 5, 0, 0, 0};
  EXPECT_EQ(methods::tree_sum_in_place(v.data(), 5), ((1.0 + 5.0) + 3.0) + ((2.0 + 0.0) + 4.0));
}

TEST(SelectionMethods, StreamingMatchesBruteForce) {
  for (const Shape& s : shapes()) {
    const testing::OwnedInputs o = make_inputs(s, 21);
    const AttentionInputs in = o.view(false);
    const HipParams p = params_of(s);
    const MaskResult m = methods::select_masks(methods::find_selection_method("streaming"), in, context("streaming", p));
    expect_mask(m, testing::brute_streaming(in, p), in, p, p.b_k, std::string("streaming ") + s.name);
  }
}

TEST(SelectionMethods, QuestMatchesBruteForce) {
  for (const Shape& s : shapes()) {
    for (int64_t page : {s.b_k, int64_t{8}, int64_t{16}}) {
      HipParams p = params_of(s);
      if (page % p.b_k != 0 || p.k % page != 0) continue;
      for (bool ties : {false, true}) {  // rounded inputs: integer bounds, exact in both, ties everywhere
        const testing::OwnedInputs o = testing::selection_inputs(s, 31 + page, ties);
        const AttentionInputs in = o.view(false);
        const MaskResult m = methods::select_masks(methods::find_selection_method("quest"), in,
                                                   context("quest", p, {{"quest_page", double(page)}}));
        expect_mask(m, testing::brute_quest(in, p, page), in, p, page,
                    std::string("quest ") + s.name + " page " + std::to_string(page) + (ties ? " ties" : ""));
      }
    }
  }
}

TEST(SelectionMethods, VslashMatchesBruteForce) {
  for (const Shape& s : shapes()) {
    for (double share : {0.5, 0.0, 1.0, 0.3}) {
      const HipParams p = params_of(s);
      const testing::OwnedInputs o = make_inputs(s, 41);
      const AttentionInputs in = o.view(false);
      const SelectionContext ctx = context("vslash", p, {{"vslash_vertical_share", share}});
      const testing::BruteVslash want = testing::brute_vslash_state(in, p, share);
      const std::shared_ptr<const methods::VslashState> got = methods::vslash_state(in, ctx);
      const std::string what = std::string("vslash ") + s.name + " share " + std::to_string(share);
      EXPECT_EQ(got->vertical, want.vertical) << what;
      EXPECT_EQ(got->slash, want.slash) << what;
      const MaskResult m = methods::select_masks(methods::find_selection_method("vslash"), in, ctx);
      expect_mask(m, testing::brute_vslash_masks(in, p, want), in, p, p.b_k, what);
    }
  }
}

TEST(SelectionMethods, DecodeRefreshesFollowTheCurrentQuery) {
  // A prompt of 150 tokens, then the refresh of a query at position 170 over 171 cached keys.
  const Shape s{"decode", 4, 2, 150, 150, 16, 32, 8, 2, 1, 4, 4};
  const HipParams p = params_of(s);
  const testing::OwnedInputs prompt = make_inputs(s, 51);
  testing::OwnedInputs rows = testing::random_inputs(4, 2, 1, 171, 16, 52);
  std::copy(prompt.k.begin(), prompt.k.begin() + 150 * 16, rows.k.begin());  // KV head 0 keeps the prompt's keys
  rows.positions = {170};
  const AttentionInputs in = rows.view(false);
  for (const methods::SelectionMethod* m : methods::selection_methods()) {
    const SelectionContext ctx = context(m->name, p);
    const std::shared_ptr<const methods::MethodState> state = methods::decode_state(*m, prompt.view(false), ctx);
    EXPECT_EQ(state != nullptr, m->name == "vslash") << m->name;
    const MaskResult got = methods::select_for_decode(*m, in, ctx, state.get());
    EXPECT_EQ(got.query_blocks, 1) << m->name;
    if (m->name == "streaming") {
      expect_mask(got, testing::brute_streaming(in, p), in, p, p.b_k, "streaming decode");
    }
    if (m->name == "quest") {
      expect_mask(got, testing::brute_quest(in, p, 16), in, p, 16, "quest decode");
    }
    if (m->name == "vslash") {
      // V and S from the prompt; the slash offsets count back from the current position.
      const testing::BruteVslash st = testing::brute_vslash_state(prompt.view(false), p, 0.5);
      expect_mask(got, testing::brute_vslash_masks(in, p, st), in, p, p.b_k, "vslash decode");
      EXPECT_NE(got.count(0, 0), 0);
    }
    if (m->name == "hip") {
      EXPECT_EQ(got.blocks, estimate_masks_reference(in, p).mask.blocks);
    }
  }
}

}  // namespace
}  // namespace hipstudio::hip

namespace hipstudio::hip {
namespace {

TEST(SelectionMethods, MasksDoNotDependOnTheThreadCount) {
  const testing::SelectionShape s = testing::selection_shapes()[1];
  const HipParams p = testing::selection_params(s);
  const testing::OwnedInputs o = testing::selection_inputs(s, 99);
  for (const methods::SelectionMethod* m : methods::selection_methods()) {
    SelectionContext one = testing::selection_context(m->name, p), many = one;
    one.threads = 1, many.threads = 3;
    const MaskResult a = methods::select_masks(*m, o.view(false), one), b = methods::select_masks(*m, o.view(false), many);
    EXPECT_EQ(a.blocks, b.blocks) << m->name;
    EXPECT_EQ(a.counts, b.counts) << m->name;
  }
}

}  // namespace
}  // namespace hipstudio::hip
