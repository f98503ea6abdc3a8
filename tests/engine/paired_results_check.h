#pragma once
// Every output of two paired analyses compared exactly, but the timings (which differ from run to
// run): the prompt's per-token metrics, every layer's quality and masks, the kept inputs, the decode
// steps and the access streams. A split, resumed or re-run analysis must give an unsplit run's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "kernels/mask_reference.h"

namespace hipstudio::testing {

// Equal as doubles, NaN equal to NaN (a windowed layer's mass and output error are NaN).
inline bool same_double(double a, double b) { return a == b || (a != a && b != b); }
inline bool same_doubles(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_double(a[i], b[i])) return false;
  return true;
}

inline void expect_same_side(const SideResult& a, const SideResult& b) {
  EXPECT_EQ(a.nll, b.nll);
  EXPECT_TRUE(same_double(a.mean_nll, b.mean_nll)) << a.mean_nll << " vs " << b.mean_nll;
  EXPECT_TRUE(same_double(a.ppl, b.ppl)) << a.ppl << " vs " << b.ppl;
  EXPECT_EQ(a.generated, b.generated);
}

inline void expect_same_masks(const hip::MaskResult& a, const hip::MaskResult& b, const std::string& what) {
  EXPECT_EQ(a.heads, b.heads) << what;
  EXPECT_EQ(a.query_blocks, b.query_blocks) << what;
  EXPECT_EQ(a.kb, b.kb) << what;
  EXPECT_EQ(a.blocks, b.blocks) << what;
  EXPECT_EQ(a.counts, b.counts) << what;
  EXPECT_EQ(a.dense_from, b.dense_from) << what;
  EXPECT_EQ(a.iterations, b.iterations) << what;
  EXPECT_EQ(a.branches, b.branches) << what;
}

inline void expect_same_results(const PairedAnalysis& a, const PairedAnalysis& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.prompt_ids, b.prompt_ids);
  EXPECT_EQ(a.options.decode_steps, b.options.decode_steps);
  EXPECT_EQ(a.options.hip.refresh_every, b.options.hip.refresh_every);
  EXPECT_EQ(a.hip_through_layer, b.hip_through_layer);
  expect_same_side(a.dense, b.dense);
  expect_same_side(a.hip, b.hip);
  EXPECT_TRUE(same_double(a.kl, b.kl)) << a.kl << " vs " << b.kl;
  EXPECT_EQ(a.top1_agreement, b.top1_agreement);
  EXPECT_EQ(a.mask_refreshes, b.mask_refreshes);
  ASSERT_EQ(a.decode.size(), b.decode.size());
  for (size_t i = 0; i < a.decode.size(); ++i) {
    EXPECT_EQ(a.decode[i].step, b.decode[i].step) << "step " << i;
    EXPECT_EQ(a.decode[i].position, b.decode[i].position) << "step " << i;
    EXPECT_EQ(a.decode[i].dense_token, b.decode[i].dense_token) << "step " << i;
    EXPECT_EQ(a.decode[i].hip_token, b.decode[i].hip_token) << "step " << i;
    EXPECT_EQ(a.decode[i].refreshed, b.decode[i].refreshed) << "step " << i;
    EXPECT_EQ(a.decode[i].mask_tokens_accessed, b.decode[i].mask_tokens_accessed) << "step " << i;
    EXPECT_EQ(a.decode[i].sparse_tokens_accessed, b.decode[i].sparse_tokens_accessed) << "step " << i;
  }
  EXPECT_EQ(a.access.steps, b.access.steps);
  EXPECT_EQ(a.access.layers, b.access.layers);
  EXPECT_EQ(a.access.heads, b.access.heads);
  EXPECT_EQ(a.access.first_layer, b.access.first_layer);
  EXPECT_EQ(a.access.hip_layers, b.access.hip_layers);
  EXPECT_EQ(a.access.mask_keys, b.access.mask_keys);
  EXPECT_EQ(a.access.sparse_keys, b.access.sparse_keys);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const LayerQuality &x = a.layers[l], &y = b.layers[l];
    EXPECT_EQ(x.layer, y.layer) << "layer " << l;
    EXPECT_EQ(x.dense, y.dense) << "layer " << l;
    EXPECT_EQ(x.pending, y.pending) << "layer " << l;
    EXPECT_TRUE(x.math == y.math) << "layer " << l;
    ASSERT_EQ(x.heads.size(), y.heads.size()) << "layer " << l;
    for (size_t h = 0; h < x.heads.size(); ++h) {
      const HeadQuality &p = x.heads[h], &q = y.heads[h];
      const std::string at = std::to_string(l) + "/" + std::to_string(h);
      EXPECT_TRUE(same_double(p.recall, q.recall)) << at;
      EXPECT_TRUE(same_double(p.random_recall, q.random_recall)) << at;
      EXPECT_TRUE(same_double(p.mass, q.mass)) << at;
      EXPECT_TRUE(same_double(p.random_mass, q.random_mass)) << at;
      EXPECT_TRUE(same_double(p.out_rel_err, q.out_rel_err)) << at;
      EXPECT_TRUE(same_double(p.random_out_rel_err, q.random_out_rel_err)) << at;
    }
  }
  ASSERT_EQ(a.masks.size(), b.masks.size());
  for (size_t i = 0; i < a.masks.size(); ++i) {
    const std::string at = "masks of layer " + std::to_string(a.masks[i].layer);
    EXPECT_EQ(a.masks[i].layer, b.masks[i].layer) << at;
    expect_same_masks(a.masks[i].hip, b.masks[i].hip, at + ", HiP");
    expect_same_masks(a.masks[i].oracle, b.masks[i].oracle, at + ", oracle");
    expect_same_masks(a.masks[i].random, b.masks[i].random, at + ", random");
    EXPECT_EQ(a.masks[i].has_oracle, b.masks[i].has_oracle) << at;
    EXPECT_TRUE(a.masks[i].math == b.masks[i].math) << at;
    EXPECT_TRUE(same_doubles(a.masks[i].recall, b.masks[i].recall)) << at;
    EXPECT_TRUE(same_doubles(a.masks[i].random_recall, b.masks[i].random_recall)) << at;
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const std::string at = "inputs of layer " + std::to_string(a.inputs[i].layer);
    EXPECT_EQ(a.inputs[i].layer, b.inputs[i].layer) << at;
    EXPECT_EQ(a.inputs[i].tokens, b.inputs[i].tokens) << at;
    EXPECT_EQ(a.inputs[i].host().q, b.inputs[i].host().q) << at;
    EXPECT_EQ(a.inputs[i].host().k, b.inputs[i].host().k) << at;
    EXPECT_EQ(a.inputs[i].host().v, b.inputs[i].host().v) << at;
  }
}

}  // namespace hipstudio::testing
