#pragma once
// The views layer behind one interface, fed one layer's prompt attention chunk by chunk (as the
// chunked prefill produces it) and finished into per-head quality and, where asked, the masks:
//  - the float64 CPU reference (engine/views/reference_views.h): exact, the default on the CPU;
//  - the tensor implementation (tensor_layer_views.cpp): LibTorch ops wherever the tensors live
//    (CUDA on a CUDA run) with the HiP mask the forward pass's kernels produced. The exact oracle
//    is computed in query-row tiles with a top-k per query block (no T x T matrix, no length
//    cut-off); only per-head numbers, and the masks of the layers asked for, reach the host.
// Both follow the reference's definitions (kernels/oracle.h, attention_metrics.h, key_set.h) and
// the one seeding rule of layer_views.h; tests run them against each other.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "engine/analysis/paired_result.h"
#include "engine/backends/attention_backend.h"
#include "engine/views/layer_views.h"

namespace hipstudio {

// Bytes of one score tile of the tensor implementation (see LayerViewsSetup::tile_bytes); the
// memory estimate counts a few of them.
inline constexpr int64_t kLayerViewsTileBytes = int64_t{1} << 30;

// The views' form of a layer's attention maths (layer_attention_math's, what the forward pass ran).
inline ViewsMath views_math(const AttentionMath& m) { return ViewsMath{m.window, hip::ScoreTransform{m.scale, m.softcap}}; }

struct LayerViewsSetup {
  int64_t layer = 0;
  int64_t prompt_tokens = 0;  // T: the chunks together cover query rows [0, T)
  hip::HipParams params;      // causal
  // The layer's window, scale and soft-cap (views_math(layer_attention_math(config, layer))): dense
  // probabilities, mass and output error score with them; a windowed layer's numbers are NaN
  // (reference_views.h) and its masks what HiP would select on full causal attention.
  ViewsMath math;
  uint64_t seed = 1;          // the analysis' random seed (layer_random_seed applies the layer)
  // The method of the sparse side whose mask the views measure (the "hip" slot of the results):
  // the forward pass's mask when a chunk brings it, else this method's selection.
  hip::methods::MethodChoice method;
  bool keep_masks = false;    // finish() also returns the three masks and recall tables (host)
  // The random baseline's attention mass and output error (HeadQuality::random_mass and
  // random_out_rel_err); false: NaN, not computed (about a quarter of a layer's views at 128k
  // tokens). Its mask and recall are made either way.
  bool random_scores = true;
  // Tensor implementation: bytes of one (heads of a KV group, query rows, keys) score tile; the
  // query rows of a tile follow from it (a multiple of b_q). Tests shrink it to cover the tiling.
  int64_t tile_bytes = kLayerViewsTileBytes;
  // Tensor implementation: a whole-prompt chunk of bf16/f16 CUDA inputs takes the fused route
  // (dense rows from the flash kernel, see tensor_layer_views.cpp); tests turn it off to compare.
  bool fused_dense = true;
  // Tensor implementation, fused route on CUDA: the oracle's block scores by the block-max kernel
  // (kernels/cuda/oracle_block_scores.h) where it takes the shapes, else by tensor ops (the same
  // products summed in another order: LayerViewsCuda.Bf16BlockMaxKernelGivesTheTensorOpsOracle
  // compares the two). Tests turn it off to compare.
  bool block_max_kernel = true;
  // Tensor implementation: called between KV groups; it may throw to stop the layer (the GUI's
  // background views give way to a newly picked layer there).
  std::function<void()> checkpoint;
};

// One prefill chunk of the layer: post-RoPE queries of rows [first_row, first_row + tq) and the
// keys/values of positions [0, first_row + tq), any dtype, one device.
struct LayerViewsChunk {
  at::Tensor q;            // (hq, tq, d)
  at::Tensor k, v;         // (hkv, first_row + tq, d)
  int64_t first_row = 0;   // a multiple of b_q
  // HiP's mask of these rows as the forward pass's kernels computed it ((hq, ceil(tq / b_q), kb)
  // and (hq, ceil(tq / b_q)) int32, on q's device), or undefined: the backend estimates it.
  at::Tensor hip_blocks, hip_counts;
};

struct LayerViewsResult {
  LayerQuality quality;
  bool has_masks = false;
  LayerMaskViews masks;  // when setup.keep_masks
  bool fused_dense = false;  // the tensor implementation's fused route ran (tensor_layer_views.cpp)
  bool block_max_kernel = false;  // the oracle's block scores came from the block-max kernel
};

class LayerViewsBackend {
 public:
  virtual ~LayerViewsBackend() = default;
  virtual std::string name() const = 0;
  // Chunks come in row order and together cover [0, prompt_tokens).
  virtual void add_chunk(const LayerViewsChunk& chunk) = 0;
  virtual LayerViewsResult finish() = 0;
};

std::unique_ptr<LayerViewsBackend> make_reference_layer_views(const LayerViewsSetup& setup);
std::unique_ptr<LayerViewsBackend> make_tensor_layer_views(const LayerViewsSetup& setup);
// The run's implementation: the tensor one for CUDA tensors, the reference elsewhere.
std::unique_ptr<LayerViewsBackend> make_layer_views(const c10::Device& device, const LayerViewsSetup& setup);

// Per-head numbers of one whole layer at once (one chunk): the analysis' former layer_quality().
LayerViewsResult compute_layer_views(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const LayerViewsSetup& setup, bool use_reference);

}  // namespace hipstudio
