// The rows the CUDA sparse attention reads for a method's mask (engine/backends/method_rows.h),
// checked on the CPU against the key set the mask means (kernels/key_set.h's attended_keys, what
// the float64 reference attends): the kernels' key list, the sink, the rows' blocks and the tail
// from HiP's dense_from (kernels/cuda/attention_parts.cuh), rebuilt here, must hold each of those
// keys exactly once, for Quest's pages wider than b_k (starting below the sink or not) and for a
// method of b_k blocks.
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/backends/method_rows.h"
#include "kernels/key_set.h"
#include "kernels/methods/selection_method.h"
#include "kernels/search_range.h"

namespace hipstudio {
namespace {

namespace hm = hip::methods;

TEST(MethodRows, KernelKeyListsEqualTheKeysTheMaskMeans) {
  constexpr int64_t hq = 4, hkv = 2, t = 96, d = 8;
  std::vector<float> q(hq * t * d), k(hkv * t * d);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(std::sin(0.37 * i) + 0.3 * std::cos(0.013 * i * i));
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(std::cos(0.11 * i) * (1.0 + 0.5 * std::sin(0.007 * i)));
  hip::AttentionInputs in;
  in.q = q.data(), in.k = k.data(), in.v = k.data();
  in.hq = hq, in.hkv = hkv, in.tq = t, in.tk = t, in.d = d;
  struct Case {
    const char* method;
    int64_t page, sink, window;
  };
  int checked_rows = 0, rewritten = 0;
  for (const Case c : {Case{"quest", 4, 2, 0}, Case{"quest", 4, 2, 4}, Case{"quest", 8, 2, 4}, Case{"quest", 8, 6, 2},
                       Case{"quest", 8, 0, 0}, Case{"streaming", 0, 2, 4}}) {
    hip::HipParams p;
    p.k = 16, p.b_q = 4, p.b_k = 2, p.b_sq = 1, p.b_sk = 1, p.sink = c.sink, p.window = c.window;
    const hm::SelectionMethod& m = hm::find_selection_method(c.method);
    const hm::MethodValues given = c.page ? hm::MethodValues{{"quest_page", static_cast<double>(c.page)}} : hm::MethodValues{};
    const hm::MethodChoice choice{c.method, hm::resolve_values(m, given, p)};
    const hip::MaskResult mask = hm::select_masks(m, in, hm::choice_context(choice, p, 0));
    const int64_t b = m.block_tokens(p, choice.values), gap = b > p.b_k ? b / p.b_k - 1 : 0;
    const at::Tensor blocks = at::from_blob(const_cast<int32_t*>(mask.blocks.data()), {mask.heads, mask.query_blocks, mask.kb}, at::kInt);
    const at::Tensor counts = at::from_blob(const_cast<int32_t*>(mask.counts.data()), {mask.heads, mask.query_blocks}, at::kInt);
    const at::Tensor dense_from = at::from_blob(const_cast<int64_t*>(mask.dense_from.data()), {mask.query_blocks}, at::kLong);
    const MethodRows rows = method_rows(blocks, counts, dense_from, p, gap, t, t);
    ASSERT_EQ(rows.blocks.size(2), mask.kb + gap);
    const at::Tensor rb = rows.blocks.contiguous(), rc = rows.counts.contiguous();
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t qb = 0; qb < mask.query_blocks; ++qb) {
        const hip::SearchRange r = hip::search_range(in, p, qb);
        const int32_t* row = rb.data_ptr<int32_t>() + (h * mask.query_blocks + qb) * (mask.kb + gap);
        const int64_t count = rc.data_ptr<int32_t>()[h * mask.query_blocks + qb];
        rewritten += count != mask.count(h, qb);
        for (int64_t j = 1; j < count; ++j) ASSERT_LT(row[j - 1], row[j]) << c.method << " rows ascend";
        for (int64_t i = r.row_begin; i < r.row_end; ++i) {
          const int64_t e = hip::visible_end(in, p, i);
          std::vector<int64_t> kernel;
          for (int64_t key = 0; key < std::min(p.sink, e + 1); ++key) kernel.push_back(key);
          for (int64_t j = 0; j < count; ++j)
            for (int64_t key = row[j] * p.b_k; key < (row[j] + 1) * p.b_k && key <= e; ++key) kernel.push_back(key);
          for (int64_t key = r.dense_from; key <= e; ++key) kernel.push_back(key);
          std::vector<int64_t> want;
          hip::attended_keys(in, p, mask, h, i, want);
          ASSERT_EQ(kernel, want) << c.method << " page " << c.page << " sink " << c.sink << " window " << c.window
                                  << ": head " << h << ", query " << i;
          ++checked_rows;
        }
      }
  }
  EXPECT_GT(checked_rows, 0);
  EXPECT_GT(rewritten, 0) << "no case needed a rewrite: the test would not see a wrong one";
}

}  // namespace
}  // namespace hipstudio
