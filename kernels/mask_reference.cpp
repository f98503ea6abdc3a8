#include "kernels/mask_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/score_logit.h"
#include "kernels/dot_f64.h"
#include "kernels/parallel_for.h"
#include "kernels/search_range.h"

namespace hipstudio::hip {
namespace {

// A node (or branch) of the search, with the score of its representative when already known: a
// child whose representative equals its parent's (e.g. the left half with rho = 0, or a one-block
// node carried to the next iteration) reuses that score instead of recomputing the same dots.
struct Node {
  int32_t begin, end;
  int32_t repr;        // -1 while unknown (initial nodes)
  double score;
};

// Scratch space of one worker, reused across (head, query block) items.
struct Searcher {
  std::vector<double> rows;    // (R, d) sampled query rows as float64
  std::vector<Node> nodes;     // (Kb) current nodes, ascending begin
  std::vector<Node> branches;  // (<= 2 Kb) this iteration's branches, node order
  std::vector<int32_t> order;  // branch indices, best first after selection
  std::vector<char> kept;      // (branches) selection flags
  ScoreTransform score;        // MaskOptions::score

  struct Outcome {
    int32_t iterations = 0;
    int64_t branches = 0;
  };

  // Runs the search of (h, qb); writes the ascending selection to out (count returned through
  // *count, the rest -1) and fills *trace when given.
  Outcome run(const AttentionInputs& in, const HipParams& p, int64_t h, int64_t qb, int32_t* out, int32_t* count,
              MaskTrace* trace) {
    const int64_t kb = hip_kb(p);
    const SearchRange sr = search_range(in, p, qb);
    const int64_t n = sr.blocks();
    if (trace) {
      *trace = MaskTrace{};
      trace->head = h;
      trace->query_block = qb;
      trace->row_begin = sr.row_begin;
      trace->row_end = sr.row_end;
      trace->p0 = sr.p0;
      trace->lo = sr.lo;
      trace->hi = sr.hi;
      trace->dense_from = sr.dense_from;
    }
    Outcome outcome;
    std::fill(out, out + kb, -1);
    if (n <= kb) {  // step 3: the whole range fits in the budget
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<int32_t>(sr.lo + j);
      *count = static_cast<int32_t>(n);
      if (trace) trace->blocks.assign(out, out + n);
      return outcome;
    }

    // Sampled query rows, converted once: every branch score reuses them.
    const int64_t d = in.d;
    int64_t r_count = 0;
    rows.resize(static_cast<size_t>(((sr.row_end - sr.row_begin + p.b_sq - 1) / p.b_sq) * d));
    for (int64_t i = sr.row_begin; i < sr.row_end; i += p.b_sq, ++r_count) {
      const float* q = q_row(in, h, i);
      std::copy(q, q + d, rows.begin() + r_count * d);
    }
    const int64_t g = kv_head(in, h);
    const int64_t keys_per_repr = p.b_k / p.b_sk;
    auto score_of = [&](int64_t repr) {
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t u = 0; u < keys_per_repr; ++u) {
        double s = max_dot_rows_f64(rows.data(), r_count, k_row(in, g, repr * p.b_k + u * p.b_sk), d);
        if (score.scale > 0.0 || score.softcap > 0.0) {  // monotonic: the max of the transformed logits
          s = score_logit(s, score_scale(score, d), score);
        }
        if (s > best) best = s;
      }
      return best;
    };

    // Step 4: Kb initial nodes of (nearly) equal size.
    nodes.resize(static_cast<size_t>(kb));
    int64_t largest = 0;
    for (int64_t j = 0; j < kb; ++j) {
      nodes[j] = Node{static_cast<int32_t>(sr.lo + j * n / kb), static_cast<int32_t>(sr.lo + (j + 1) * n / kb), -1, 0.0};
      largest = std::max<int64_t>(largest, nodes[j].end - nodes[j].begin);
    }
    if (trace) {
      for (const Node& nd : nodes) {
        trace->initial_begin.push_back(nd.begin);
        trace->initial_end.push_back(nd.end);
      }
    }

    // Step 5: split, score, keep the best Kb, until every node is one block.
    while (largest > 1) {
      branches.clear();
      for (const Node& nd : nodes) {
        if (nd.end - nd.begin >= 2) {
          const int32_t m = nd.begin + (nd.end - nd.begin) / 2;
          branches.push_back(Node{nd.begin, m, nd.repr, nd.score});
          branches.push_back(Node{m, nd.end, nd.repr, nd.score});
        } else {
          branches.push_back(nd);
        }
      }
      for (Node& br : branches) {
        const int64_t len = br.end - br.begin;
        const int64_t off = std::min<int64_t>(len - 1, static_cast<int64_t>(std::floor(p.rho * static_cast<double>(len))));
        const int32_t repr = static_cast<int32_t>(br.begin + off);
        if (repr != br.repr) {  // the inherited score belongs to another block: compute this one
          br.repr = repr;
          br.score = score_of(repr);
        }
      }
      // Keep the Kb best: score descending, then smaller begin (begins are distinct).
      const size_t nb = branches.size();
      order.resize(nb);
      for (size_t i = 0; i < nb; ++i) order[i] = static_cast<int32_t>(i);
      auto better = [&](int32_t x, int32_t y) {
        const Node& a = branches[x];
        const Node& b = branches[y];
        if (a.score != b.score) return a.score > b.score;
        return a.begin < b.begin;
      };
      if (static_cast<int64_t>(nb) > kb) std::nth_element(order.begin(), order.begin() + kb, order.end(), better);
      kept.assign(nb, 0);
      for (int64_t j = 0; j < kb; ++j) kept[order[j]] = 1;
      // Next nodes in ascending begin: branches are already in that order (nodes were ascending).
      nodes.clear();
      largest = 0;
      for (size_t i = 0; i < nb; ++i) {
        if (!kept[i]) continue;
        nodes.push_back(branches[i]);
        largest = std::max<int64_t>(largest, branches[i].end - branches[i].begin);
      }
      if (trace) {
        TraceIteration it;
        it.branches.reserve(nb);
        for (size_t i = 0; i < nb; ++i) {
          const Node& br = branches[i];
          it.branches.push_back(TraceBranch{br.begin, br.end, br.repr, br.score, kept[i] != 0});
        }
        trace->iterations.push_back(std::move(it));
      }
      outcome.iterations += 1;
      outcome.branches += static_cast<int64_t>(nb);
    }

    // Step 6: the node starts, ascending (nodes are kept in ascending order).
    for (int64_t j = 0; j < kb; ++j) out[j] = nodes[j].begin;
    *count = static_cast<int32_t>(kb);
    if (trace) trace->blocks.assign(out, out + kb);
    return outcome;
  }
};

void check_request(const AttentionInputs& in, const HipParams& p, int64_t head, int64_t qb) {
  const int64_t qbs = query_blocks(in, p);
  if (head < 0 || head >= in.hq || qb < 0 || qb >= qbs) {
    throw AttentionInputError("trace request (head " + std::to_string(head) + ", query block " + std::to_string(qb) +
                              ") is outside the " + std::to_string(in.hq) + " heads x " + std::to_string(qbs) +
                              " query blocks");
  }
}

}  // namespace

MaskResult make_empty_mask(const AttentionInputs& in, const HipParams& p) {
  MaskResult m;
  m.heads = in.hq;
  m.query_blocks = query_blocks(in, p);
  m.kb = hip_kb(p);
  const size_t items = static_cast<size_t>(m.heads * m.query_blocks);
  // Kb columns per row even where the range is shorter: a budget far beyond the keys would
  // allocate padding only, so refuse sizes that cannot be meant.
  if (static_cast<double>(items) * static_cast<double>(m.kb) > static_cast<double>(int64_t{1} << 32)) {
    throw HipParamError("a mask of " + std::to_string(m.heads) + " heads x " + std::to_string(m.query_blocks) +
                        " query blocks x " + std::to_string(m.kb) + " blocks (k / b_k) is too large; lower k (" +
                        std::to_string(p.k) + ") to at most the number of keys");
  }
  m.blocks.assign(items * static_cast<size_t>(m.kb), -1);
  m.counts.assign(items, 0);
  m.iterations.assign(items, 0);
  m.branches.assign(items, 0);
  m.dense_from.resize(static_cast<size_t>(m.query_blocks));
  for (int64_t qb = 0; qb < m.query_blocks; ++qb) m.dense_from[qb] = search_range(in, p, qb).dense_from;
  return m;
}

MaskEstimate estimate_masks_reference(const AttentionInputs& in, const HipParams& p, const MaskOptions& opt) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  for (const TraceRequest& r : opt.trace) check_request(in, p, r.head, r.query_block);

  MaskEstimate est;
  est.mask = make_empty_mask(in, p);
  MaskResult& m = est.mask;
  est.traces.resize(opt.trace.size());
  // Which trace slot (if any) each item fills; the first request of a pair is traced, duplicates
  // are copied afterwards.
  std::vector<int32_t> trace_slot(m.counts.size(), -1);
  for (size_t t = 0; t < opt.trace.size(); ++t) {
    int32_t& slot = trace_slot[m.index(opt.trace[t].head, opt.trace[t].query_block)];
    if (slot < 0) slot = static_cast<int32_t>(t);
  }

  const int64_t items = m.heads * m.query_blocks;
  std::vector<Searcher> searchers(static_cast<size_t>(parallel_workers(items, opt.threads)));
  for (Searcher& s : searchers) s.score = opt.score;
  parallel_for(items, opt.threads, [&](int64_t item, int worker) {
    const int64_t h = item / m.query_blocks;
    const int64_t qb = item % m.query_blocks;
    const int32_t slot = trace_slot[item];
    const Searcher::Outcome o = searchers[worker].run(in, p, h, qb, m.blocks.data() + item * m.kb, &m.counts[item],
                                                      slot >= 0 ? &est.traces[slot] : nullptr);
    m.iterations[item] = o.iterations;
    m.branches[item] = o.branches;
  });
  for (size_t t = 0; t < opt.trace.size(); ++t) {
    const int32_t slot = trace_slot[m.index(opt.trace[t].head, opt.trace[t].query_block)];
    if (slot != static_cast<int32_t>(t)) est.traces[t] = est.traces[slot];
  }
  return est;
}

MaskTrace trace_block_mask(const AttentionInputs& in, const HipParams& p, int64_t head, int64_t query_block) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  check_request(in, p, head, query_block);
  Searcher s;
  MaskTrace trace;
  std::vector<int32_t> out(static_cast<size_t>(hip_kb(p)));
  int32_t count = 0;
  s.run(in, p, head, query_block, out.data(), &count, &trace);
  return trace;
}

}  // namespace hipstudio::hip
