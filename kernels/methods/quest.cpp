// Quest (Tang et al. 2024, Quest: Query-Aware Sparsity for Efficient Long-Context LLM Inference):
// keys in pages of b = quest_page tokens; page j keeps the elementwise min and max of its keys; a
// query row q bounds its largest score on the page by
//   bound(q, j) = sum_d max(q_d min_d, q_d max_d)   (float64, d ascending from +0.0: exact
//                                                    products, a fixed order, equal bits everywhere)
// and query block qb scores page j by the max bound over its sampled rows
// i = row_begin + t b_sq < row_end. The k / b best pages of [lo, hi) (pages of b, method_mask.h;
// score descending, ties: lower page), all when the range holds at most k / b, each written as its
// b / b_k key blocks. A decode refresh bounds the current query's pages: the same rule.
#include <algorithm>
#include <limits>

#include "kernels/methods/method_mask.h"
#include "kernels/methods/quest_rule.h"
#include "kernels/methods/selection_method.h"
#include "kernels/parallel_for.h"

namespace hipstudio::hip::methods {
namespace {

int64_t page_tokens(const HipParams&, const MethodValues& v) { return method_int(v, "quest_page"); }

std::string quest_problem(const HipParams& p, const MethodValues& v) {
  const int64_t page = method_int(v, "quest_page");
  if (page % p.b_k != 0)
    return "quest_page (" + std::to_string(page) + ") must be a multiple of b_k (" + std::to_string(p.b_k) +
           "): a page is written as whole key blocks";
  if (p.k % page != 0)
    return "k (" + std::to_string(p.k) + ") must be a multiple of quest_page (" + std::to_string(page) +
           "): the budget is k / quest_page pages";
  return "";
}

MaskResult quest_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState*) {
  const HipParams& p = ctx.hip;
  const int64_t b = method_int(ctx.values, "quest_page"), d = in.d;
  MaskResult m = empty_method_mask(in, p, b);
  const int64_t pages = in.tk / b, take = p.k / b;
  // (hkv, pages, d) elementwise min and max of each whole page's keys.
  std::vector<double> lo_key(static_cast<size_t>(in.hkv * pages * d)), hi_key(lo_key.size());
  for (int64_t g = 0; g < in.hkv; ++g) {
    for (int64_t j = 0; j < pages; ++j) {
      double* mn = lo_key.data() + (g * pages + j) * d;
      double* mx = hi_key.data() + (g * pages + j) * d;
      for (int64_t e = 0; e < d; ++e) mn[e] = mx[e] = k_row(in, g, j * b)[e];
      for (int64_t key = j * b + 1; key < (j + 1) * b; ++key) {
        const float* kr = k_row(in, g, key);
        for (int64_t e = 0; e < d; ++e) mn[e] = std::min<double>(mn[e], kr[e]), mx[e] = std::max<double>(mx[e], kr[e]);
      }
    }
  }
  const int64_t items = m.heads * m.query_blocks;
  struct Scratch {
    std::vector<double> scores;
    std::vector<int32_t> chosen;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, ctx.threads)));
  parallel_for(items, ctx.threads, [&](int64_t item, int worker) {
    const int64_t h = item / m.query_blocks, qb = item % m.query_blocks, g = kv_head(in, h);
    const MethodRange r = method_range(in, p, b, qb);
    Scratch& s = scratch[static_cast<size_t>(worker)];
    s.scores.assign(static_cast<size_t>(r.blocks()), -std::numeric_limits<double>::infinity());
    if (r.blocks() > take) {
      for (int64_t j = r.lo; j < r.hi; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = r.row_begin; i < r.row_end; i += p.b_sq) {
          const size_t at = static_cast<size_t>((g * pages + j) * d);
          best = std::max(best, quest_bound(q_row(in, h, i), lo_key.data() + at, hi_key.data() + at, d));
        }
        s.scores[static_cast<size_t>(j - r.lo)] = best;
      }
    }
    top_indices(s.scores.data(), r.blocks(), take, s.chosen);
    for (int32_t& j : s.chosen) j += static_cast<int32_t>(r.lo);
    write_method_blocks(p, b, s.chosen, m.blocks.data() + item * m.kb, &m.counts[item], m.kb);
  });
  return m;
}

}  // namespace

const SelectionMethod& quest_method() {
  static const SelectionMethod m{
      "quest", "Quest",
      "Tang et al. 2024, Quest: Query-Aware Sparsity for Efficient Long-Context LLM Inference (ICML 2024)",
      "the k / quest_page pages with the largest bound sum_d max(q_d min_d, q_d max_d) over the block's sampled rows",
      {{"quest_page", MethodParamKind::kInteger, 1.0, 4096.0, 16.0,
        "Quest page size in tokens (a multiple of b_k; k a multiple of it)"}},
      page_tokens, quest_problem, quest_reference, nullptr};
  return m;
}

}  // namespace hipstudio::hip::methods
