// The views layer's tensor implementation (layer_views_backend.h): LibTorch ops on the device the
// tensors live on. Per chunk, per KV group and per tile of query rows it forms the raw scores
// S = Q K^T of the visible keys once and takes from them
//  - the oracle: the max of S over each query block's sampled rows and each key block's keys,
//    the Kb best blocks of the search range with the reference's tie rule (smaller block first);
//  - dense probabilities P = softmax(softcap(scale S)) (causal; the layer's ViewsMath, the rule of
//    kernels/score_transform.h: scale 1 / sqrt(d) and no cap for plain maths, the same ops and bits
//    as without it), and for HiP's and (LayerViewsSetup::random_scores) the random mask the
//    attention mass kept (P summed over the attended keys, gathered) and the sparse output, which is
//    P restricted to those keys and renormalised, against the dense output P V.
// A windowed layer's numbers are NaN (HiP does not run there, reference_views.h): its tiles run
// only when its masks are asked for (what HiP would select on full causal attention).
// Scores are float64 for float32 (and float64) inputs, so masks and oracle match the reference
// exactly; float32 for bf16/f16 inputs (their products are exact in float32, sums are not).
//
// A whole-prompt chunk of bf16/f16 CUDA inputs of a layer without a soft-cap (the flash kernel has
// none) takes the fused route (fused_dense_rows): the dense
// output and each row's log-sum-exp come from the fused flash kernel, the oracle's scores are formed
// for the sampled rows only, and mass and output error are computed from the attended keys' scores,
// gathered: no (rows x keys) probability tile is ever written. That is what makes a layer's views
// at 32k-128k tokens take a fraction of a second instead of seconds. The dense output then carries
// the run dtype's rounding (about 2e-3 relative), as the model's own dense attention does.
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/version.h>

#include "engine/analysis/host_inputs.h"
#include "engine/analysis/layer_views_backend.h"
#include "engine/runtime/phase_profile.h"
#include "engine/views/reference_views.h"
#include "kernels/score_logit.h"
#include "kernels/shape_only_inputs.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/search_range.h"
#include "kernels/torch/hip_torch.h"
#include "kernels/methods/torch/tensor_selection.h"
#include "kernels/methods/torch/tensor_top_blocks.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/oracle_block_scores.h"
#endif

namespace hipstudio {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many of each row's listed blocks the selection `chosen` (..., key_blocks) bool holds, from a
// -1 padded ascending block list (..., kb) of any integer type: a gather of kb entries per row, where
// scattering the list into a (..., key_blocks) selection first cost a pass over 64k key blocks of
// every query block at 128k tokens. A repeated entry (never in an ascending list) counts once.
at::Tensor listed_hits(const at::Tensor& chosen, const at::Tensor& blocks) {
  const int64_t key_blocks = chosen.size(-1);
  const at::Tensor ids = blocks.to(at::kLong);
  at::Tensor counted = ids.ge(0).logical_and(ids.lt(key_blocks));
  if (ids.size(-1) > 1) {
    const at::Tensor repeat = ids.narrow(-1, 1, ids.size(-1) - 1).eq(ids.narrow(-1, 0, ids.size(-1) - 1));
    counted.narrow(-1, 1, ids.size(-1) - 1).logical_and_(repeat.logical_not());
  }
  const at::Tensor hit = chosen.gather(-1, ids.clamp(0, key_blocks - 1)).logical_and(counted);
  return hit.sum(-1).to(at::kDouble);
}

// A selection (..., key_blocks) bool from its -1 padded block lists (..., kb): for the recall's
// gathers (listed_hits), where the lists are what the oracle's ranking writes.
at::Tensor selection_of_lists(const at::Tensor& lists, int64_t key_blocks) {
  const at::Tensor ids = lists.to(at::kLong);
  std::vector<int64_t> shape(lists.sizes().begin(), lists.sizes().end());
  shape.back() = key_blocks + 1;  // the last column takes the padding
  at::Tensor chosen = at::zeros(shape, lists.options().dtype(at::kBool));
  chosen.scatter_(-1, ids.masked_fill(ids.lt(0), key_blocks), true);
  return chosen.narrow(-1, 0, key_blocks);
}

// TF32 tensor-core products for float32 copies of bf16/f16 values while it lives: their 8/11-bit
// significands are exact in TF32's 11, so the products are exact and accumulate in float32, as the
// plain float32 product would (only the summation order differs), at several times the speed.
class Tf32Products {
 public:
  Tf32Products() : before_(at::globalContext().allowTF32CuBLAS()) { at::globalContext().setAllowTF32CuBLAS(true); }
  ~Tf32Products() { at::globalContext().setAllowTF32CuBLAS(before_); }
  Tf32Products(const Tf32Products&) = delete;
  Tf32Products& operator=(const Tf32Products&) = delete;

 private:
  bool before_;
};

// One KV group's dense attention output (G, T, d) in the compute type and each row's natural
// log-sum-exp of the scaled scores (G, T), from the fused flash kernel; false where it does not run
// these shapes (the caller then forms the probabilities itself).
struct DenseRows {
  at::Tensor out, lse;
  const char* kernel = "none";  // which fused kernel made them
};
// cuDNN's fused attention with its log-sum-exp, through the dispatcher by argument name (the op is
// private and its signature has moved between LibTorch versions; a build without it skips it).
// Checked on a few rows against the log-sum-exp formed directly, so that a convention it does not
// share (base, scaling, layout) falls back to the flash kernel instead of skewing the views.
// Why: at 128k tokens cuDNN runs a layer's causal attention in about half the flash kernel's time.
// HIPSTUDIO_PROFILE=1: why cuDNN's rows were not used, once per process.
void note_cudnn_skipped(const std::string& why) {
  static bool said = false;
  if (PhaseProfile::enabled() && !said) std::fprintf(stderr, "profile: views dense rows not by cuDNN: %s\n", why.c_str());
  said = true;
}

[[maybe_unused]] bool cudnn_dense_rows(const at::Tensor& qb, const at::Tensor& kb, const at::Tensor& vb, double scale, DenseRows& rows) {
  auto op = c10::Dispatcher::singleton().findSchema({"aten::_scaled_dot_product_cudnn_attention", ""});
  if (!op) {
    note_cudnn_skipped("no aten::_scaled_dot_product_cudnn_attention in this LibTorch");
    return false;
  }
  std::vector<c10::IValue> stack;
  for (const c10::Argument& a : op->schema().arguments()) {
    const std::string& name = a.name();
    if (name == "query") stack.emplace_back(qb);
    else if (name == "key") stack.emplace_back(kb);
    else if (name == "value") stack.emplace_back(vb);
    else if (name == "compute_log_sumexp" || name == "is_causal") stack.emplace_back(true);
    else if (name == "return_debug_mask") stack.emplace_back(false);
    else if (name == "dropout_p") stack.emplace_back(0.0);
    else if (name == "scale") stack.emplace_back(scale);
    else if (a.default_value()) stack.push_back(*a.default_value());
    else if (a.type()->kind() == c10::TypeKind::OptionalType) stack.emplace_back();  // None (attn_bias)
    else {  // an argument this code does not know how to fill
      note_cudnn_skipped("its argument '" + name + "'");
      return false;
    }
  }
  op->callBoxed(&stack);
  if (stack.size() < 2 || !stack[0].isTensor() || !stack[1].isTensor()) {
    note_cudnn_skipped("its outputs");
    return false;
  }
  const int64_t G = qb.size(1), T = qb.size(2);
  at::Tensor lse = stack[1].toTensor();
  if (lse.numel() != G * T) {
    note_cudnn_skipped("its log-sum-exp has " + std::to_string(lse.numel()) + " entries");
    return false;
  }
  lse = lse.reshape({G, T}).to(at::kFloat);
  // The check: three rows of the first head, scores in float32 from the same bf16/f16 values.
  const at::Tensor check_rows = at::tensor(std::vector<int64_t>{0, T / 2, T - 1}, at::kLong).to(qb.device());
  const at::Tensor q = qb[0][0].index_select(0, check_rows).to(at::kFloat);
  const at::Tensor s = at::matmul(q, kb[0][0].to(at::kFloat).t()) * scale;
  const at::Tensor later = at::arange(T, check_rows.options()).unsqueeze(0).gt(check_rows.unsqueeze(1));
  const at::Tensor expected = at::logsumexp(s.masked_fill(later, -std::numeric_limits<float>::infinity()), -1);
  if (!at::allclose(lse[0].index_select(0, check_rows), expected, 1e-5, 1e-4)) {
    note_cudnn_skipped("its log-sum-exp differs from the checked rows'");
    return false;
  }
  rows.out = stack[0].toTensor().squeeze(0);
  rows.lse = lse;
  return rows.out.dim() == 3 && rows.out.size(1) == T;
}

bool fused_dense_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale, at::ScalarType compute,
                      DenseRows& rows) {
#if TORCH_VERSION_MAJOR >= 2
  try {
    const int64_t G = q.size(0);
    const at::Tensor qb = q.unsqueeze(0).contiguous();
    const at::Tensor kb = k.unsqueeze(0).unsqueeze(0).expand({1, G, k.size(0), k.size(1)}).contiguous();
    const at::Tensor vb = v.unsqueeze(0).unsqueeze(0).expand({1, G, v.size(0), v.size(1)}).contiguous();
    bool by_cudnn = false;
    try {
      by_cudnn = cudnn_dense_rows(qb, kb, vb, scale, rows);
    } catch (const std::exception& e) {
      by_cudnn = false;  // shapes or a build cuDNN does not run: the flash kernel does
      note_cudnn_skipped(std::string("it threw: ") + std::string(e.what()).substr(0, 200));
    }
    if (by_cudnn) {
      rows.out = rows.out.to(compute);
      rows.lse = rows.lse.to(compute);
      rows.kernel = "cudnn";
      return true;
    }
    auto r = at::_scaled_dot_product_flash_attention(qb, kb, vb, 0.0, /*is_causal=*/true, false, scale);
    rows.out = std::get<0>(r).squeeze(0).to(compute);
    rows.lse = std::get<1>(r).squeeze(0).to(compute);
    rows.kernel = "flash";
    return rows.lse.dim() == 2 && rows.lse.size(1) == q.size(1);
  } catch (const std::exception&) {
    return false;
  }
#else
  (void)q, (void)k, (void)v, (void)scale, (void)compute, (void)rows;
  return false;
#endif
}

// The fused route's oracle block scores (G, nq, key_blocks) float32 by the block-max kernel
// (kernels/cuda/oracle_block_scores.h) from the chunk's bf16/f16 rows [r0, r0 + rows) of KV group
// g's heads, without the (sampled rows x keys) score matrix the tensor ops write; undefined where
// the kernel is not built or does not take the shapes (the caller then forms them with tensor ops).
at::Tensor kernel_block_scores(const LayerViewsChunk& chunk, int64_t g, int64_t G, int64_t r0, int64_t rows, int64_t nq,
                               int64_t key_blocks, const hip::HipParams& p) {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  const at::ScalarType t = chunk.q.scalar_type();
  if (!chunk.q.is_cuda() || (t != at::kBFloat16 && t != at::kHalf) || chunk.k.scalar_type() != t) return at::Tensor();
  const at::Tensor q = chunk.q.narrow(0, g * G, G).narrow(1, r0, rows);
  const at::Tensor k = chunk.k[g];
  if (q.stride(2) != 1 || k.stride(1) != 1) return at::Tensor();
  gpu::OracleBlockScoresLaunch l;
  l.q = q.data_ptr(), l.k = k.data_ptr();
  l.q_head_stride = q.stride(0), l.q_row_stride = q.stride(1), l.k_row_stride = k.stride(0);
  l.bf16 = t == at::kBFloat16;
  l.heads = G, l.d = q.size(2), l.rows = rows, l.keys = chunk.first_row + r0 + rows, l.key_blocks = key_blocks, l.nq = nq;
  l.first_position = chunk.first_row + r0;
  l.b_q = p.b_q, l.b_sq = p.b_sq, l.b_k = p.b_k;
  if (!gpu::oracle_block_scores_fits(l)) return at::Tensor();
  at::Tensor out = at::full({G, nq, key_blocks}, kNegInf, chunk.q.options().dtype(at::kFloat));
  l.out = out.data_ptr<float>();
  gpu::oracle_block_scores(l);
  return out;
#else
  (void)chunk, (void)g, (void)G, (void)r0, (void)rows, (void)nq, (void)key_blocks, (void)p;
  return at::Tensor();
#endif
}

class TensorLayerViews final : public LayerViewsBackend {
 public:
  explicit TensorLayerViews(const LayerViewsSetup& setup) : setup_(setup) {
    const hip::HipParams& p = setup_.params;
    hip::validate_hip_params(p);
    if (!p.causal) throw std::invalid_argument("layer views: the tensor implementation is causal only");
  }
  std::string name() const override { return "LibTorch tensor ops"; }

  void add_chunk(const LayerViewsChunk& chunk) override;
  LayerViewsResult finish() override;

 private:
  void start(const LayerViewsChunk& chunk);
  // The random baseline's blocks of the chunk's query blocks on the device, made when first needed:
  // the whole prompt's random mask is drawn on host threads while the device works on the oracle.
  const at::Tensor& chunk_random_blocks();
  at::Tensor hip_mask_of(const LayerViewsChunk& chunk) const;
  void tile(const LayerViewsChunk& chunk, const at::Tensor& hip_blocks, int64_t group, const at::Tensor& kg,
            const at::Tensor& vg, const DenseRows* fused, int64_t r0, int64_t r1);

  LayerViewsSetup setup_;
  int64_t rows_ = 0;  // query rows seen
  int64_t hq_ = 0, hkv_ = 0, d_ = 0, kb_ = 0, query_blocks_ = 0;
  hip::MaskResult random_;  // whole prompt, host (shapes only: drawn once)
  std::future<hip::MaskResult> random_drawing_;  // random_ until it is needed
  at::Tensor chunk_random_;                      // chunk_random_blocks()
  int64_t chunk_qb0_ = 0, chunk_nqb_ = 0;
  at::Device chunk_device_ = at::kCPU;
  at::ScalarType compute_ = at::kDouble;
  // (hq) float64 sums on the device: recall over query blocks, mass over queries, squared output
  // error (HiP, random) and squared dense output.
  at::Tensor recall_, random_recall_, mass_, random_mass_, error_, random_error_, dense_norm_;
  // keep_masks: the result's host arrays, each chunk's rows copied in as the chunk is done (one
  // transfer each, counts summed on the device; nothing held on the device between chunks): HiP's
  // and the oracle's masks and both recall tables (hq, query blocks).
  hip::MaskResult hip_mask_, oracle_mask_;
  std::vector<double> recall_table_, random_recall_table_;
  // The four above, made on a host thread (start()); host_arrays() moves them in on this thread and
  // checks their sizes, so that nothing reads them half made or, after a failure, empty.
  struct HostArrays {
    hip::MaskResult hip, oracle;
    std::vector<double> recall, random_recall;
  };
  std::future<HostArrays> host_arrays_;
  void host_arrays() {
    if (host_arrays_.valid()) {
      HostArrays a = host_arrays_.get();
      hip_mask_ = std::move(a.hip);
      oracle_mask_ = std::move(a.oracle);
      recall_table_ = std::move(a.recall);
      random_recall_table_ = std::move(a.random_recall);
    }
    const size_t table = static_cast<size_t>(hq_ * query_blocks_);
    if (hip_mask_.blocks.size() != table * static_cast<size_t>(kb_) || oracle_mask_.blocks.size() != hip_mask_.blocks.size() ||
        recall_table_.size() != table || random_recall_table_.size() != table)
      throw std::logic_error("layer views: the host mask arrays were not made");
  }
  at::Tensor chunk_oracle_, chunk_recall_, chunk_random_recall_;  // (hq, chunk query blocks, ...) being filled
  int64_t fused_groups_ = 0;  // KV groups that took the fused route (the result says so)
  int64_t kernel_tiles_ = 0;  // tiles whose oracle scores the block-max kernel made
  PhaseProfile profile_;      // HIPSTUDIO_PROFILE=1: where a layer's views spend their time
};

void TensorLayerViews::start(const LayerViewsChunk& chunk) {
  const hip::HipParams& p = setup_.params;
  hq_ = chunk.q.size(0);
  d_ = chunk.q.size(2);
  hkv_ = chunk.k.size(0);
  kb_ = hip::hip_kb(p);
  query_blocks_ = ceil_div(setup_.prompt_tokens, p.b_q);
  const at::ScalarType t = chunk.q.scalar_type();
  compute_ = t == at::kFloat || t == at::kDouble ? at::kDouble : at::kFloat;
  random_drawing_ = std::async(std::launch::async, [shape = hip::shape_only_inputs(hq_, hkv_, setup_.prompt_tokens,
                                                                                   setup_.prompt_tokens, d_),
                                                    p, seed = layer_random_seed(setup_.seed, setup_.layer)] {
    return hip::random_masks(shape, p, seed);
  });
  if (setup_.keep_masks) {
    // The masks as the reference holds them: shapes and dense_from from the search ranges. Made on
    // a host thread while the device works: at 32k tokens and b_q 32 they are 130 MB whose first
    // touch (page faults) took 0.07 s of a slider change. Nothing reads them before host_arrays().
    const size_t table = static_cast<size_t>(hq_ * query_blocks_);
    host_arrays_ = std::async(std::launch::async, [table, p, shape = hip::shape_only_inputs(hq_, hkv_, setup_.prompt_tokens,
                                                                                          setup_.prompt_tokens, d_)] {
      HostArrays a;
      a.hip = hip::make_empty_mask(shape, p);
      a.oracle = hip::make_empty_mask(shape, p);
      a.recall.assign(table, 0.0);
      a.random_recall.assign(table, 0.0);
      return a;
    });
  }
  const auto sums = chunk.q.options().dtype(at::kDouble);
  for (at::Tensor* t : {&recall_, &random_recall_, &mass_, &random_mass_, &error_, &random_error_, &dense_norm_})
    *t = at::zeros({hq_}, sums);
}

const at::Tensor& TensorLayerViews::chunk_random_blocks() {
  if (chunk_random_.defined()) return chunk_random_;
  if (random_drawing_.valid()) random_ = random_drawing_.get();
  if (random_.blocks.size() != static_cast<size_t>(hq_ * query_blocks_ * kb_))  // its drawing threw earlier
    throw std::logic_error("layer views: the random baseline's mask was not drawn");
  chunk_random_ = at::from_blob(random_.blocks.data(), {hq_, query_blocks_, kb_}, at::kInt)
                      .narrow(1, chunk_qb0_, chunk_nqb_)
                      .to(chunk_device_);
  return chunk_random_;
}

// The sparse side's mask of the chunk's rows: the forward pass's, else (a non-HiP method) the
// method's tensor selection where it has one, else (HiP) the CUDA kernels', else the reference's.
at::Tensor TensorLayerViews::hip_mask_of(const LayerViewsChunk& chunk) const {
  if (chunk.hip_blocks.defined()) return chunk.hip_blocks;
  if (!setup_.method.is_hip()) {
    const hip::methods::SelectionMethod& method = hip::methods::find_selection_method(setup_.method.name);
    const hip::methods::SelectionContext ctx = hip::methods::choice_context(setup_.method, setup_.params, setup_.layer);
    const hip::methods::TensorInputs in{chunk.q, chunk.k, at::Tensor()};
    if (hip::methods::find_tensor_selection(method.name)) return hip::methods::select_masks(method, in, ctx).blocks;
    const HostAttentionInputs host(chunk.q, chunk.k, chunk.k);
    const hip::MaskResult m = hip::methods::select_masks(method, host.view, ctx);
    return at::from_blob(const_cast<int32_t*>(m.blocks.data()), {m.heads, m.query_blocks, m.kb}, at::kInt)
        .to(chunk.q.device(), at::kInt, /*non_blocking=*/false, /*copy=*/true);
  }
  if (chunk.q.is_cuda() && hip_torch::cuda_kernels_status().empty())
    return hip_torch::estimate_masks(chunk.q, chunk.k, setup_.params).blocks;
  const HostAttentionInputs host(chunk.q, chunk.k, chunk.k);
  const hip::MaskResult m = hip::estimate_masks_reference(host.view, setup_.params).mask;
  // A copy even on the CPU: `m` dies here.
  return at::from_blob(const_cast<int32_t*>(m.blocks.data()), {m.heads, m.query_blocks, m.kb}, at::kInt)
      .to(chunk.q.device(), at::kInt, /*non_blocking=*/false, /*copy=*/true);
}

void TensorLayerViews::add_chunk(const LayerViewsChunk& chunk) {
  const hip::HipParams& p = setup_.params;
  if (chunk.first_row != rows_ || chunk.first_row % p.b_q != 0)
    throw std::logic_error("layer views: chunks must come in row order and start on a query block");
  if (chunk.q.dim() != 3 || chunk.k.dim() != 3 || chunk.k.size(1) != chunk.first_row + chunk.q.size(1))
    throw std::logic_error("layer views: a chunk's keys must cover its rows' positions");
  profile_.begin(chunk.q.is_cuda());
  if (setup_.math.windowed() && !setup_.keep_masks) {  // NaN numbers: nothing to compute
    hq_ = chunk.q.size(0);
    rows_ += chunk.q.size(1);
    return;
  }
  if (rows_ == 0) start(chunk);
  profile_.lap("start (random mask)");
  c10::InferenceMode inference;
  const int64_t tq = chunk.q.size(1), group = hq_ / hkv_, qb0 = chunk.first_row / p.b_q, nqb = ceil_div(tq, p.b_q);
  const at::Tensor hip_blocks = hip_mask_of(chunk);
  chunk_random_ = at::Tensor();
  chunk_qb0_ = qb0, chunk_nqb_ = nqb, chunk_device_ = chunk.q.device();
  profile_.lap("masks to device");
  if (setup_.keep_masks) {
    chunk_oracle_ = at::full({hq_, nqb, kb_}, -1, chunk.q.options().dtype(at::kInt));
    chunk_recall_ = at::zeros({hq_, nqb}, chunk.q.options().dtype(at::kDouble));
    chunk_random_recall_ = at::zeros_like(chunk_recall_);
  }
  // Query rows per tile: the score tile (group heads, rows, visible keys) within tile_bytes.
  const int64_t keys = chunk.k.size(1), element = static_cast<int64_t>(c10::elementSize(compute_));
  const int64_t fit = setup_.tile_bytes / std::max<int64_t>(1, group * keys * element);
  const int64_t rows_per_tile = std::max<int64_t>(1, fit / p.b_q) * p.b_q;
  int64_t fused_rows_per_tile = rows_per_tile;
  // The fused route: a whole prompt (top-left causal is then the prompt's own) in a fused kernel's dtype.
  const bool fusable = setup_.fused_dense && chunk.q.is_cuda() && compute_ == at::kFloat && chunk.first_row == 0 &&
                       keys == tq && setup_.math.score.softcap == 0.0;
  if (fusable) {
    // The fused route never holds a (rows x keys) tile (its scores come in sub-tiles of query blocks,
    // fused_oracle_rows): a tile is bounded by its per-query-block tensors (block scores and the
    // oracle's temporaries over the key blocks, the gathered keys and values, the attended scores),
    // so it takes many more rows, and the per-tile work (top-k, launches) runs far fewer times.
    const int64_t key_blocks = ceil_div(keys, p.b_k), width = p.sink + kb_ * p.b_k + p.window + p.b_k + p.b_q;
    const int64_t per_block = group * element * (6 * key_blocks + 4 * width * d_ + 3 * p.b_q * width);
    fused_rows_per_tile =
        std::max(rows_per_tile, std::max<int64_t>(1, setup_.tile_bytes / std::max<int64_t>(1, per_block)) * p.b_q);
  }
  for (int64_t g = 0; g < hkv_; ++g) {
    if (setup_.checkpoint) setup_.checkpoint();
    const at::Tensor kg = chunk.k[g].to(compute_), vg = chunk.v[g].to(compute_);
    DenseRows dense;
    const bool fused = fusable && fused_dense_rows(chunk.q.narrow(0, g * group, group), chunk.k[g], chunk.v[g],
                                                   hip::score_scale(setup_.math.score, d_), compute_, dense);
    fused_groups_ += fused ? 1 : 0;
    profile_.lap(dense.kernel == std::string("cudnn") ? "dense rows by cuDNN" : "dense rows by flash (or none)");
    const int64_t rows = fused ? fused_rows_per_tile : rows_per_tile;  // a group the flash kernel refused: plain tiles
    for (int64_t r0 = 0; r0 < tq; r0 += rows)
      tile(chunk, hip_blocks, g, kg, vg, fused ? &dense : nullptr, r0, std::min(tq, r0 + rows));
  }
  if (setup_.keep_masks) {
    profile_.begin(chunk.q.is_cuda());
    host_arrays();
    auto into_mask = [&](hip::MaskResult& out, const at::Tensor& blocks) {
      at::from_blob(out.blocks.data(), {hq_, query_blocks_, kb_}, at::kInt).narrow(1, qb0, nqb).copy_(blocks);
      at::from_blob(out.counts.data(), {hq_, query_blocks_}, at::kInt)
          .narrow(1, qb0, nqb)
          .copy_(blocks.ge(0).sum(-1).to(at::kInt));
    };
    into_mask(hip_mask_, hip_blocks.to(at::kInt));
    into_mask(oracle_mask_, chunk_oracle_);
    auto into_table = [&](std::vector<double>& out, const at::Tensor& rows) {
      at::from_blob(out.data(), {hq_, query_blocks_}, at::kDouble).narrow(1, qb0, nqb).copy_(rows);
    };
    into_table(recall_table_, chunk_recall_);
    into_table(random_recall_table_, chunk_random_recall_);
    chunk_oracle_ = chunk_recall_ = chunk_random_recall_ = at::Tensor();
    profile_.lap("masks to host");
  }
  rows_ += tq;
}

// One KV group's heads over chunk rows [r0, r1): every number of the module comment. `fused`: the
// group's dense rows from the fused kernel (the fused route), else null.
void TensorLayerViews::tile(const LayerViewsChunk& chunk, const at::Tensor& hip_blocks, int64_t g, const at::Tensor& kg,
                            const at::Tensor& vg, const DenseRows* fused, int64_t r0, int64_t r1) {
  const hip::HipParams& p = setup_.params;
  const int64_t G = hq_ / hkv_, rows = r1 - r0, nq = ceil_div(rows, p.b_q), padded = nq * p.b_q;
  const int64_t first = chunk.first_row + r0;  // position of the tile's first row
  const int64_t keys = chunk.first_row + r1;   // keys the tile's rows can see
  const int64_t key_blocks = ceil_div(keys, p.b_k);
  const auto dev = chunk.q.options();
  const auto long_opts = dev.dtype(at::kLong);

  at::Tensor q = chunk.q.narrow(0, g * G, G).narrow(1, r0, rows).to(compute_);
  if (padded > rows) q = at::constant_pad_nd(q, {0, 0, 0, padded - rows});

  // ---- oracle: block scores over sampled rows and every key of a block, top kb per query block
  at::Tensor s;  // (G, padded, keys) raw scores: the unfused route's probabilities are made from them
  at::Tensor row_max;  // (G, nq, keys): each query block's max over its sampled rows
  at::Tensor block_scores;  // (G, nq, key_blocks)
  if (fused && setup_.block_max_kernel) block_scores = kernel_block_scores(chunk, g, G, r0, rows, nq, key_blocks, p);
  kernel_tiles_ += block_scores.defined() ? 1 : 0;
  if (block_scores.defined()) {
    // made by the block-max kernel
  } else if (fused) {
    // Only the sampled rows' scores, a few query blocks at a time within tile_bytes; padding rows
    // (past the prompt) never win a max.
    const int64_t sampled = ceil_div(p.b_q, p.b_sq);
    const int64_t step = std::max<int64_t>(1, setup_.tile_bytes / std::max<int64_t>(1, G * sampled * keys * 4));
    const at::Tensor qs = q.view({G, nq, p.b_q, d_}).slice(2, 0, p.b_q, p.b_sq);
    const at::Tensor kt = kg.narrow(0, 0, keys).t();
    const Tf32Products tf32;
    row_max = at::empty({G, nq, keys}, q.options());
    for (int64_t j0 = 0; j0 < nq; j0 += step) {
      const int64_t n = std::min(step, nq - j0);
      // Keys past the sub-tile's last row are in no search range of its blocks: not scored (half
      // the products of a whole prompt's causal triangle), left at -inf.
      const int64_t visible = std::min(keys, first + (j0 + n) * p.b_q);
      at::Tensor ss = at::matmul(qs.narrow(1, j0, n).reshape({G, n * sampled, d_}), kt.narrow(1, 0, visible))
                          .view({G, n, sampled, visible});
      if ((j0 + n) * p.b_q > rows) {
        const at::Tensor row = ((at::arange(n, long_opts) + j0) * p.b_q).unsqueeze(1) + (at::arange(sampled, long_opts) * p.b_sq).unsqueeze(0);
        ss.masked_fill_(row.ge(rows).view({1, n, sampled, 1}), kNegInf);
      }
      row_max.narrow(1, j0, n).narrow(2, 0, visible).copy_(ss.amax(2));
      if (visible < keys) row_max.narrow(1, j0, n).narrow(2, visible, keys - visible).fill_(kNegInf);
    }
  } else {
    s = at::matmul(q, kg.narrow(0, 0, keys).t());
    if (padded > rows) s.narrow(1, rows, padded - rows).fill_(kNegInf);
    row_max = s.view({G, nq, p.b_q, keys}).slice(2, 0, p.b_q, p.b_sq).amax(2);
  }
  if (!block_scores.defined()) {
    if (key_blocks * p.b_k > keys) row_max = at::constant_pad_nd(row_max, {0, key_blocks * p.b_k - keys}, kNegInf);
    block_scores = row_max.view({G, nq, key_blocks, p.b_k}).amax(-1);
    row_max = at::Tensor();
  }
  profile_.lap("oracle block scores");
  std::vector<int64_t> hi(static_cast<size_t>(nq));
  const int64_t lo = p.sink / p.b_k;
  for (int64_t j = 0; j < nq; ++j) hi[j] = hip::search_hi(p, first + j * p.b_q);
  const at::Tensor hi_t = at::tensor(hi, at::kLong).to(dev.device());
  // The oracle's choice per query block (kernels/oracle.h): every block of the range [lo, hi) when
  // it holds at most kb, else the kb best scores, ties to the smaller block; ascending lists
  // (G, nq, kb) and the same as a (G, nq, key_blocks) selection.
  const at::Tensor oracle_lists = hip::methods::top_in_ranges(block_scores, lo, hi_t, kb_);
  const at::Tensor oracle = selection_of_lists(oracle_lists, key_blocks);
  profile_.lap("oracle top-k");

  const int64_t qb = r0 / p.b_q;  // first query block of the tile within the chunk
  const at::Tensor& random_blocks = chunk_random_blocks();
  const at::Tensor found = oracle_lists.ge(0).sum(-1).to(at::kDouble);
  auto recall = [&](const at::Tensor& blocks) {
    const at::Tensor hits = listed_hits(oracle, blocks.narrow(0, g * G, G).narrow(1, qb, nq));
    return (hits / found.clamp_min(1)).masked_fill(found.eq(0), 1.0);  // (G, nq)
  };
  const at::Tensor hip_recall = recall(hip_blocks), random_recall = recall(random_blocks);
  recall_.narrow(0, g * G, G).add_(hip_recall.sum(-1));
  random_recall_.narrow(0, g * G, G).add_(random_recall.sum(-1));
  if (setup_.keep_masks) {
    chunk_oracle_.narrow(0, g * G, G).narrow(1, qb, nq).copy_(oracle_lists);
    chunk_recall_.narrow(0, g * G, G).narrow(1, qb, nq).copy_(hip_recall);
    chunk_random_recall_.narrow(0, g * G, G).narrow(1, qb, nq).copy_(random_recall);
  }
  profile_.lap("recall and block lists");

  // ---- dense output and what a selection keeps. The sink, a selection's blocks' keys and the dense
  // tail of each query block are disjoint ranges (key_set.cpp), at most W keys; padding entries weigh
  // 0. Reading W keys per row instead of masking all of them keeps this part small.
  const double scale = hip::score_scale(setup_.math.score, d_), cap = setup_.math.score.softcap;
  const at::Tensor weight = at::arange(padded, long_opts).lt(rows).to(at::kDouble);  // (padded)
  const at::Tensor v = vg.narrow(0, 0, keys);
  at::Tensor probs, dense, lse;
  if (fused) {
    dense = fused->out.narrow(1, r0, rows);
    lse = fused->lse.narrow(1, r0, rows);
    if (padded > rows) {
      dense = at::constant_pad_nd(dense, {0, 0, 0, padded - rows});
      lse = at::constant_pad_nd(lse, {0, padded - rows});
    }
  } else {
    // Probabilities (causal), padded rows made finite and weighted out.
    if (padded > rows) s.narrow(1, rows, padded - rows).fill_(0);
    s.mul_(scale);
    if (cap > 0.0) s.div_(cap).tanh_().mul_(cap);  // before the causal mask: the cap of -inf is not -inf
    if (keys > first + 1) {  // keys after the first row's position: hidden from the rows before them
      const at::Tensor later = at::arange(first + 1, keys, long_opts).unsqueeze(0);
      const at::Tensor positions = at::arange(first, first + padded, long_opts).unsqueeze(1);
      s.narrow(2, first + 1, keys - first - 1).masked_fill_(later.gt(positions), kNegInf);
    }
    probs = at::softmax(s, -1);
    s = at::Tensor();
    dense = at::matmul(probs, v);  // (G, padded, d)
  }
  dense_norm_.narrow(0, g * G, G).add_((dense.to(at::kDouble).pow(2).sum(-1) * weight).sum(-1));

  const int64_t tail = p.window + p.b_k + p.b_q;  // keys from dense_from to the block's last row
  const int64_t width = p.sink + kb_ * p.b_k + tail;
  const at::Tensor sink_ids = at::arange(p.sink, long_opts).view({1, 1, p.sink}).expand({G, nq, p.sink});
  const at::Tensor tail_ids =
      (hi_t * p.b_k).view({1, nq, 1}) + at::arange(tail, long_opts).view({1, 1, tail});  // (1, nq, tail)
  const at::Tensor row_positions = at::arange(first, first + padded, long_opts).view({1, nq, p.b_q, 1});
  // HIPSTUDIO_PROFILE=1 splits both selections' part into gathers, weights and the output with
  // its sums (summed over HiP's and the random mask's).
  auto score = [&](const at::Tensor& blocks, at::Tensor& mass_sum, at::Tensor& error_sum) {
    const at::Tensor rows = blocks.narrow(0, g * G, G).narrow(1, qb, nq).to(at::kLong);  // (G, nq, kb)
    const at::Tensor block_ids =
        (rows.unsqueeze(-1) * p.b_k + at::arange(p.b_k, long_opts)).masked_fill(rows.lt(0).unsqueeze(-1), keys);
    at::Tensor ids = at::cat({sink_ids, block_ids.view({G, nq, kb_ * p.b_k}), tail_ids.expand({G, nq, tail})}, -1);
    const at::Tensor valid = ids.lt(keys);
    ids = ids.masked_fill(valid.logical_not(), 0);  // (G, nq, width), every id a real key
    const at::Tensor values = v.index_select(0, ids.reshape({-1})).view({G, nq, width, d_});
    at::Tensor weights;  // (G, nq, b_q, width): each row's dense probability of each attended key
    if (fused) {
      // exp(scaled score - the row's log-sum-exp), causal: a tail key after the row's position is 0.
      const at::Tensor k_ids = kg.index_select(0, ids.reshape({-1})).view({G, nq, width, d_});
      profile_.lap("mass and error: gathers");
      at::Tensor scores;
      {
        const Tf32Products tf32;  // float32 copies of bf16/f16 values, as for the oracle's scores
        scores = at::matmul(q.view({G, nq, p.b_q, d_}), k_ids.transpose(-1, -2));
      }
      const at::Tensor seen = valid.unsqueeze(2).logical_and(ids.unsqueeze(2).le(row_positions));
      weights = (scores * scale - lse.view({G, nq, p.b_q, 1})).masked_fill_(seen.logical_not(), kNegInf).exp_();
    } else {
      // causality is already in P
      weights = probs.view({G, nq, p.b_q, keys})
                    .gather(-1, ids.unsqueeze(2).expand({G, nq, p.b_q, width}))
                    .mul(valid.unsqueeze(2).to(compute_));
    }
    const at::Tensor mass = weights.sum(-1);  // (G, nq, b_q)
    profile_.lap("mass and error: weights");
    mass_sum.narrow(0, g * G, G).add_((mass.reshape({G, padded}).to(at::kDouble) * weight).sum(-1));
    const at::Tensor out = (at::matmul(weights, values) / mass.unsqueeze(-1)).reshape({G, padded, d_});
    error_sum.narrow(0, g * G, G).add_(((out - dense).to(at::kDouble).pow(2).sum(-1) * weight).sum(-1));
    profile_.lap("mass and error: output and sums");
  };
  profile_.lap("dense rows");
  score(hip_blocks, mass_, error_);
  if (setup_.random_scores) score(random_blocks, random_mass_, random_error_);
}

LayerViewsResult TensorLayerViews::finish() {
  if (rows_ != setup_.prompt_tokens) throw std::logic_error("layer views: the chunks do not cover the prompt");
  if (setup_.math.windowed() && !setup_.keep_masks) {
    LayerViewsResult r;
    r.quality = unmeasured_layer_quality(setup_.layer, hq_, setup_.math);
    return r;
  }
  profile_.begin(recall_.is_cuda());
  auto host = [](const at::Tensor& t) { return t.to(at::kCPU).contiguous(); };
  const at::Tensor recall = host(recall_), random_recall = host(random_recall_), mass = host(mass_),
                   random_mass = host(random_mass_), error = host(error_), random_error = host(random_error_),
                   dense = host(dense_norm_);
  auto relative = [](double err, double norm) {
    if (norm == 0.0) return err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::sqrt(err) / std::sqrt(norm);
  };
  LayerViewsResult r;
  r.quality.layer = setup_.layer;
  r.quality.math = setup_.math;
  r.fused_dense = fused_groups_ > 0;
  r.block_max_kernel = kernel_tiles_ > 0;
  const double blocks = static_cast<double>(query_blocks_), queries = static_cast<double>(setup_.prompt_tokens);
  for (int64_t h = 0; h < hq_; ++h) {
    HeadQuality q;
    q.recall = recall[h].item<double>() / blocks;
    q.random_recall = random_recall[h].item<double>() / blocks;
    q.mass = mass[h].item<double>() / queries;
    q.random_mass = setup_.random_scores ? random_mass[h].item<double>() / queries : kNaN;
    q.out_rel_err = relative(error[h].item<double>(), dense[h].item<double>());
    q.random_out_rel_err = setup_.random_scores ? relative(random_error[h].item<double>(), dense[h].item<double>()) : kNaN;
    r.quality.heads.push_back(q);
  }
  profile_.lap("finish: sums");
  if (setup_.math.windowed()) r.quality = unmeasured_layer_quality(setup_.layer, hq_, setup_.math);
  if (!setup_.keep_masks) {
    profile_.print("layer views, layer " + std::to_string(setup_.layer));
    return r;
  }

  r.has_masks = true;
  host_arrays();
  LayerMaskViews& m = r.masks;
  m.layer = setup_.layer;
  m.params = setup_.params;
  m.math = setup_.math;
  m.method = setup_.method.name;
  // finish() is the last call: the arrays the chunks filled move into the result.
  m.hip = std::move(hip_mask_);
  m.oracle = std::move(oracle_mask_);
  if (random_drawing_.valid()) random_ = random_drawing_.get();
  m.random = std::move(random_);
  m.recall = std::move(recall_table_);
  m.random_recall = std::move(random_recall_table_);
  profile_.lap("finish: host masks");
  profile_.print("layer views, layer " + std::to_string(setup_.layer) + (fused_groups_ ? " (fused)" : ""));
  return r;
}

}  // namespace

std::unique_ptr<LayerViewsBackend> make_tensor_layer_views(const LayerViewsSetup& setup) {
  return std::make_unique<TensorLayerViews>(setup);
}

}  // namespace hipstudio
