#include "kernels/methods/vslash.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/dot_f64.h"
#include "kernels/methods/fixed_order_f64.h"
#include "kernels/methods/method_mask.h"
#include "kernels/parallel_for.h"

namespace hipstudio::hip::methods {
namespace {

int64_t key_block(const HipParams& p, const MethodValues&) { return p.b_k; }

// The `take` indices of [0, n) with the largest scores, ascending (ties: lower index).
std::vector<int64_t> top_of(const std::vector<double>& scores, int64_t n, int64_t take) {
  std::vector<int32_t> idx;
  top_indices(scores.data(), n, std::min(take, n), idx);
  return std::vector<int64_t>(idx.begin(), idx.end());
}

std::shared_ptr<const MethodState> prompt_state(const AttentionInputs& prompt, const SelectionContext& ctx) {
  return vslash_state(prompt, ctx);
}

MaskResult vslash_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState* state) {
  return vslash_masks(in, ctx, dynamic_cast<const VslashState&>(*state));
}

}  // namespace

int64_t vslash_vertical_count(const SelectionContext& ctx) {
  const double share = method_value(ctx.values, "vslash_vertical_share");
  return static_cast<int64_t>(std::llround(share * static_cast<double>(ctx.hip.k)));
}

std::shared_ptr<const VslashState> vslash_state(const AttentionInputs& in, const SelectionContext& ctx) {
  const HipParams& p = ctx.hip;
  const int64_t rows = std::min(kVslashLastRows, in.tq), first = in.tq - rows, tk = in.tk;
  int64_t top = 0;  // P
  for (int64_t r = first; r < in.tq; ++r) top = std::max(top, visible_end(in, p, r));
  const double scale = 1.0 / std::sqrt(static_cast<double>(in.d));
  const int64_t nv = std::min(vslash_vertical_count(ctx), top + 1);
  const int64_t ns = std::min(p.k - nv, top + 1);
  auto state = std::make_shared<VslashState>();
  state->vertical.resize(static_cast<size_t>(in.hq));
  state->slash.resize(static_cast<size_t>(in.hq));
  struct Scratch {
    std::vector<double> x, e, sum;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(in.hq, ctx.threads)));
  parallel_for(in.hq, ctx.threads, [&](int64_t h, int worker) {
    Scratch& s = scratch[static_cast<size_t>(worker)];
    const int64_t g = kv_head(in, h);
    std::vector<double> v(static_cast<size_t>(tk), 0.0), sl(static_cast<size_t>(tk), 0.0);
    for (int64_t r = first; r < in.tq; ++r) {
      const int64_t e = visible_end(in, p, r);
      s.x.assign(static_cast<size_t>(tk), -std::numeric_limits<double>::infinity());
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= e; ++j) {
        s.x[j] = dot_f64(q_row(in, h, r), k_row(in, g, j), in.d) * scale;
        mx = std::max(mx, s.x[j]);
      }
      s.e.resize(static_cast<size_t>(tk));
      for (int64_t j = 0; j < tk; ++j) s.e[j] = exp_f64(s.x[j] - mx);
      s.sum.assign(static_cast<size_t>(tree_sum_padded_size(tk)), 0.0);
      std::copy(s.e.begin(), s.e.end(), s.sum.begin());
      const double total = tree_sum_in_place(s.sum.data(), tk);
      for (int64_t j = 0; j <= e; ++j) {
        const double a = s.e[j] / total;
        v[j] = v[j] + a;
        sl[e - j] = sl[e - j] + a;  // offset o = e - j
      }
    }
    state->vertical[h] = top_of(v, top + 1, nv);
    state->slash[h] = top_of(sl, top + 1, ns);
  });
  return state;
}

MaskResult vslash_masks(const AttentionInputs& in, const SelectionContext& ctx, const VslashState& state) {
  const HipParams& p = ctx.hip;
  if (static_cast<int64_t>(state.vertical.size()) != in.hq || static_cast<int64_t>(state.slash.size()) != in.hq) {
    throw MethodError("vslash: the prompt's state has " + std::to_string(state.vertical.size()) +
                      " heads, the rows " + std::to_string(in.hq));
  }
  MaskResult m = empty_method_mask(in, p, p.b_k);
  const int64_t items = m.heads * m.query_blocks, b = p.b_k;
  struct Scratch {
    std::vector<char> marked;      // (tk) token selected for this item
    std::vector<int32_t> tokens;   // the marked tokens, to clear them
    std::vector<double> counts;    // (hi - lo) tokens per block
    std::vector<int32_t> chosen, held;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, ctx.threads)));
  parallel_for(items, ctx.threads, [&](int64_t item, int worker) {
    const int64_t h = item / m.query_blocks, qb = item % m.query_blocks;
    const MethodRange r = method_range(in, p, b, qb);
    Scratch& s = scratch[static_cast<size_t>(worker)];
    const int64_t first = r.lo * b, end = r.hi * b;  // the range's keys [first, end)
    s.marked.resize(static_cast<size_t>(std::max<int64_t>(end, 1)), 0);
    s.tokens.clear();
    auto mark = [&](int64_t t) {
      if (t >= first && t < end && !s.marked[t]) s.marked[t] = 1, s.tokens.push_back(static_cast<int32_t>(t));
    };
    for (int64_t t : state.vertical[h]) mark(t);
    for (int64_t i = r.row_begin; i < r.row_end; ++i) {
      const int64_t e = visible_end(in, p, i);
      for (int64_t o : state.slash[h]) mark(e - o);
    }
    s.counts.assign(static_cast<size_t>(r.blocks()), 0.0);
    for (int32_t t : s.tokens) {
      s.counts[t / b - r.lo] += 1.0;
      s.marked[t] = 0;
    }
    if (r.blocks() <= m.kb) {
      top_indices(s.counts.data(), r.blocks(), m.kb, s.chosen);
    } else {  // the best of the blocks that hold a selected token
      s.held.clear();
      std::vector<double> held_counts;
      for (int64_t j = 0; j < r.blocks(); ++j)
        if (s.counts[j] > 0) s.held.push_back(static_cast<int32_t>(j)), held_counts.push_back(s.counts[j]);
      top_indices(held_counts.data(), static_cast<int64_t>(s.held.size()), m.kb, s.chosen);
      for (int32_t& c : s.chosen) c = s.held[c];  // held is ascending, so ties stay with the lower block
    }
    for (int32_t& j : s.chosen) j += static_cast<int32_t>(r.lo);
    write_method_blocks(p, b, s.chosen, m.blocks.data() + item * m.kb, &m.counts[item], m.kb);
  });
  return m;
}

const SelectionMethod& vslash_method() {
  static const SelectionMethod m{
      "vslash", "MInference vertical-slash",
      "Jiang et al. 2024, MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse Attention "
      "(NeurIPS 2024)",
      "V: the keys most attended by the last 64 rows, S: the most attended diagonals; blocks holding the most of "
      "V and the slashes of the block's rows",
      {{"vslash_vertical_share", MethodParamKind::kReal, 0.0, 1.0, 0.5,
        "share of the budget k given to vertical keys (the rest: slash offsets)"}},
      key_block, nullptr, vslash_reference, prompt_state};
  return m;
}

}  // namespace hipstudio::hip::methods
