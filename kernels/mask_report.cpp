#include "kernels/mask_report.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/search_range.h"

namespace hipstudio::hip {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

MaskReport build_mask_report(const AttentionInputs& in, const HipParams& p, const MaskReportOptions& opt,
                             std::vector<MaskResult> compared) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  MaskReport r;
  auto t0 = std::chrono::steady_clock::now();
  MaskOptions mopt;
  mopt.threads = opt.threads;
  r.hip.mask = estimate_masks_reference(in, p, mopt).mask;
  r.seconds_hip = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  r.oracle.mask = oracle_masks(in, p, opt.threads);
  r.seconds_oracle = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  r.random.mask = random_masks(in, p, opt.random_seed);
  const std::vector<char> searched = searched_query_blocks(in, p);
  for (char s : searched) r.searched_query_blocks += s;
  const int64_t heads = r.hip.mask.heads, qbs = r.hip.mask.query_blocks;
  r.compared.resize(compared.size());
  std::vector<SelectionReport*> all = {&r.hip, &r.oracle, &r.random};
  for (size_t i = 0; i < compared.size(); ++i) {
    const MaskResult& m = compared[i];
    if (m.heads != heads || m.query_blocks != qbs || m.kb != r.hip.mask.kb)
      throw std::invalid_argument("compared mask " + std::to_string(i) + " does not have the shape of the run's masks");
    r.compared[i].mask = std::move(compared[i]);
    all.push_back(&r.compared[i]);
  }
  for (SelectionReport* s : all) {
    s->recall = mask_recall(s->mask, r.oracle.mask);
    s->recall_per_head = mean_per_head(s->recall, heads, qbs);
    s->recall_searched_per_head = mean_per_head(s->recall, heads, qbs, &searched);
  }
  std::vector<const MaskResult*> masks;
  for (const SelectionReport* s : all) masks.push_back(&s->mask);
  std::vector<AttentionMass> mass = attention_mass(in, p, masks, opt.threads);
  for (size_t i = 0; i < all.size(); ++i) all[i]->mass = std::move(mass[i]);
  if (in.v) {
    r.dense = dense_attention_reference(in, p, opt.threads);
    for (SelectionReport* s : all) {
      s->output = sparse_attention_reference(in, p, s->mask, opt.threads);
      s->output_error = output_relative_error(s->output, r.dense);
    }
  }
  r.seconds_metrics = seconds_since(t0);
  return r;
}

}  // namespace hipstudio::hip
