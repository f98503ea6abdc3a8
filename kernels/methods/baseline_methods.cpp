// HiP, the exact oracle and the random baseline as registry entries: thin wrappers of the
// existing functions (mask_reference.h, oracle.h, random_baseline.h), so their masks are the very
// ones those give. All three choose b_k blocks and need no state (a decode refresh searches the
// current rows again).
#include "kernels/methods/selection_method.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"

namespace hipstudio::hip::methods {
namespace {

int64_t key_block(const HipParams& p, const MethodValues&) { return p.b_k; }

MaskResult hip_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState*) {
  MaskOptions options;
  options.threads = ctx.threads;
  return estimate_masks_reference(in, ctx.hip, options).mask;
}

MaskResult oracle_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState*) {
  return oracle_masks(in, ctx.hip, ctx.threads);
}

MaskResult random_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState*) {
  // engine/views/layer_views.h's layer_random_seed: seed + layer.
  const uint64_t seed = static_cast<uint64_t>(method_int(ctx.values, "random_seed")) + static_cast<uint64_t>(ctx.layer);
  return random_masks(in, ctx.hip, seed, ctx.threads);
}

}  // namespace

const SelectionMethod& hip_method() {
  static const SelectionMethod m{
      "hip", "HiP", "Lee et al. 2025, A Training-Free Sub-quadratic Cost Transformer Model Serving Framework with "
                    "Hierarchically Pruned Attention (ICLR 2025)",
      "hierarchical top-k search: k / b_k nodes split in halves, scored by a representative block, best kept",
      {}, key_block, nullptr, hip_reference, nullptr};
  return m;
}

const SelectionMethod& oracle_method() {
  static const SelectionMethod m{
      "oracle", "Oracle", "the exact top-k blocks HiP approximates (kernels/oracle.h)",
      "the k / b_k blocks with the largest max dot(q, k) over the sampled rows and every key of the block",
      {}, key_block, nullptr, oracle_reference, nullptr};
  return m;
}

const SelectionMethod& random_method() {
  static const SelectionMethod m{
      "random", "Random", "the random-selection baseline of the HiP paper's theorem 1",
      "min(k / b_k, N) blocks of the range uniformly at random, seeded by random_seed + layer",
      {{"random_seed", MethodParamKind::kInteger, 0.0, 9007199254740992.0, 1.0,
        "seed of the random baseline (each layer adds its index)"}},
      key_block, nullptr, random_reference, nullptr};
  return m;
}

}  // namespace hipstudio::hip::methods
