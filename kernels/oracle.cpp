#include "kernels/oracle.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "kernels/dot_f64.h"
#include "kernels/parallel_for.h"
#include "kernels/search_range.h"

namespace hipstudio::hip {
namespace {

void block_scores_into(const AttentionInputs& in, const HipParams& p, int64_t h, const SearchRange& sr,
                       std::vector<double>& rows, std::vector<double>& out) {
  const int64_t d = in.d;
  rows.clear();
  int64_t r_count = 0;
  for (int64_t i = sr.row_begin; i < sr.row_end; i += p.b_sq, ++r_count) {
    const float* q = q_row(in, h, i);
    rows.insert(rows.end(), q, q + d);
  }
  const int64_t g = kv_head(in, h);
  out.assign(static_cast<size_t>(sr.blocks()), -std::numeric_limits<double>::infinity());
  for (int64_t j = sr.lo; j < sr.hi; ++j) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t key = j * p.b_k; key < (j + 1) * p.b_k; ++key) {
      const double s = max_dot_rows_f64(rows.data(), r_count, k_row(in, g, key), d);
      if (s > best) best = s;
    }
    out[j - sr.lo] = best;
  }
}

}  // namespace

std::vector<double> oracle_block_scores(const AttentionInputs& in, const HipParams& p, int64_t head,
                                        int64_t query_block) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  if (head < 0 || head >= in.hq || query_block < 0 || query_block >= query_blocks(in, p)) {
    throw AttentionInputError("oracle request (head " + std::to_string(head) + ", query block " +
                              std::to_string(query_block) + ") is outside the inputs");
  }
  std::vector<double> rows, out;
  block_scores_into(in, p, head, search_range(in, p, query_block), rows, out);
  return out;
}

MaskResult oracle_masks(const AttentionInputs& in, const HipParams& p, int threads) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  MaskResult m = make_empty_mask(in, p);
  const int64_t items = m.heads * m.query_blocks;
  struct Scratch {
    std::vector<double> rows, scores;
    std::vector<int32_t> order;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, threads)));
  parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t h = item / m.query_blocks, qb = item % m.query_blocks;
    const SearchRange sr = search_range(in, p, qb);
    int32_t* out = m.blocks.data() + item * m.kb;
    const int64_t n = sr.blocks();
    if (n <= m.kb) {
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<int32_t>(sr.lo + j);
      m.counts[item] = static_cast<int32_t>(n);
      return;
    }
    Scratch& s = scratch[worker];
    block_scores_into(in, p, h, sr, s.rows, s.scores);
    s.order.resize(static_cast<size_t>(n));
    std::iota(s.order.begin(), s.order.end(), 0);
    std::nth_element(s.order.begin(), s.order.begin() + m.kb, s.order.end(), [&](int32_t a, int32_t b) {
      if (s.scores[a] != s.scores[b]) return s.scores[a] > s.scores[b];
      return a < b;
    });
    std::sort(s.order.begin(), s.order.begin() + m.kb);
    for (int64_t j = 0; j < m.kb; ++j) out[j] = static_cast<int32_t>(sr.lo + s.order[j]);
    m.counts[item] = static_cast<int32_t>(m.kb);
  });
  return m;
}

std::vector<double> mask_recall(const MaskResult& mask, const MaskResult& reference) {
  if (mask.heads != reference.heads || mask.query_blocks != reference.query_blocks || mask.kb != reference.kb) {
    throw std::invalid_argument("mask_recall: the two masks have different shapes");
  }
  std::vector<double> recall(mask.counts.size(), 1.0);
  for (int64_t h = 0; h < mask.heads; ++h) {
    for (int64_t qb = 0; qb < mask.query_blocks; ++qb) {
      const int32_t* a = mask.row(h, qb);
      const int32_t* b = reference.row(h, qb);
      const int32_t na = mask.count(h, qb), nb = reference.count(h, qb);
      if (nb == 0) continue;
      // Both rows are ascending: count the intersection by merging.
      int32_t i = 0, j = 0, hits = 0;
      while (i < na && j < nb) {
        if (a[i] == b[j]) {
          ++hits, ++i, ++j;
        } else if (a[i] < b[j]) {
          ++i;
        } else {
          ++j;
        }
      }
      recall[mask.index(h, qb)] = static_cast<double>(hits) / nb;
    }
  }
  return recall;
}

}  // namespace hipstudio::hip
