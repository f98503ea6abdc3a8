#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>
#include <torch/version.h>

#include "engine/backends/attention_backend.h"
#include "kernels/score_logit.h"

// at::_flash_attention_forward with seqused_k (the key count read on the device): LibTorch 2.5 on,
// built with CUDA (its device properties say whether flash runs on the GPU).
#if defined(HIPSTUDIO_TORCH_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define HIPSTUDIO_FLASH_DECODE_IN_GRAPH 1
#include <ATen/cuda/CUDAContext.h>
#endif

namespace hipstudio {

namespace {

#if TORCH_VERSION_MAJOR >= 2
// Leaves cuDNN out of LibTorch's SDPA choice for its lifetime (restoring the previous setting).
// Why: for bf16/f16 LibTorch picks cuDNN's attention first, and cuDNN builds an execution plan for
// every new key length, ~59 ms each on the lent H100 (PyTorch 2.11, cuDNN 9.19), while a decode
// step (or a later prefill chunk) has a new key length every time: stories15M decoded 15-20 tok/s in bf16 against 403 tok/s
// in float32 (which cuDNN does not take). Flash and memory-efficient attention have no per-shape
// setup. hipstudio bench kernels still measures cuDNN, on its fixed shapes, as its own column.
class WithoutCuDNNAttention {
 public:
  WithoutCuDNNAttention() : was_(at::globalContext().userEnabledCuDNNSDP()) { at::globalContext().setSDPUseCuDNN(false); }
  ~WithoutCuDNNAttention() { at::globalContext().setSDPUseCuDNN(was_); }
  WithoutCuDNNAttention(const WithoutCuDNNAttention&) = delete;
  WithoutCuDNNAttention& operator=(const WithoutCuDNNAttention&) = delete;

 private:
  bool was_;
};

// On CUDA, LibTorch's fused scaled-dot-product attention: no T x T score matrix in memory, and the
// fair dense baseline for HiP's timings. A whole prompt (one causal call per layer, one shape per
// run) may use cuDNN, LibTorch's first choice and the fastest at length (plan built once per
// shape); decode steps and later chunks, whose key length changes every call, leave cuDNN out.
// scale: the softmax scale where the layer's is not 1 / sqrt(head_dim) (nullopt: LibTorch's
// default, today's call and bits).
at::Tensor fused_attention(const AttentionCall& call, std::optional<double> scale) {
  const int64_t heads = call.q.size(0), T = call.q.size(1), keys = call.k.size(1);
  const int64_t kv_heads = call.k.size(0), group = heads / kv_heads;
  auto expand = [&](const at::Tensor& kv) {  // query head h reads KV head h / group
    return group == 1 ? kv : kv.unsqueeze(1).expand({kv_heads, group, keys, kv.size(2)}).reshape({heads, keys, kv.size(2)});
  };
  if (T == 1) {
    // A decode step sees every key. The group's query heads become rows of one KV head, so K/V are
    // read once per group and never copied: q [Hq, 1, d] -> [1, Hkv, group, d].
    const WithoutCuDNNAttention no_cudnn;
    const at::Tensor q = call.q.reshape({1, kv_heads, group, call.q.size(2)});
    return at::scaled_dot_product_attention(q, call.k.unsqueeze(0), call.v.unsqueeze(0), {}, 0.0, false, scale)
        .reshape({heads, 1, call.q.size(2)});
  }
  const at::Tensor q = call.q.unsqueeze(0), k = expand(call.k).unsqueeze(0), v = expand(call.v).unsqueeze(0);
  if (call.first_position == 0 && T == keys)
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, scale)[0];
  // A later prefill chunk: LibTorch's is_causal aligns top-left, so pass the causal mask itself.
  const WithoutCuDNNAttention no_cudnn;
  const at::Tensor rows = at::arange(call.first_position, call.first_position + T, call.q.options().dtype(at::kLong));
  const at::Tensor mask = at::arange(keys, rows.options()).unsqueeze(0) <= rows.unsqueeze(1);  // [T, keys]
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, scale)[0];
}
#endif

#ifdef HIPSTUDIO_FLASH_DECODE_IN_GRAPH
// Whether this LibTorch's flash attention runs the graph form's call on `device` in `dtype`: tried
// once on a few keys (a LibTorch built without flash, or a device it refuses, throws), so that a
// decode step never meets that error inside a capture. Asked outside any capture.
bool flash_decode_runs(const c10::Device& device, at::ScalarType dtype) {
  static std::mutex lock;
  static std::map<std::pair<int, int>, bool> known;
  const std::lock_guard<std::mutex> hold(lock);
  const auto key = std::make_pair(static_cast<int>(device.index()), static_cast<int>(dtype));
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  bool runs = false;
  try {
    const auto options = at::TensorOptions().device(device).dtype(dtype);
    const auto i32 = at::TensorOptions().device(device).dtype(at::kInt);
    const at::Tensor q = at::zeros({1, 4, 64}, options), k = at::zeros({16, 2, 64}, options);
    at::_flash_attention_forward(q, k, k, at::tensor({0, 1}, i32.device(at::kCPU)).to(device),
                                 at::tensor({0, 16}, i32.device(at::kCPU)).to(device), 1, 16, 0.0, false, false,
                                 std::nullopt, std::nullopt, std::nullopt, at::full({1}, 5, i32));
    runs = true;
  } catch (const c10::Error&) {
    runs = false;
  }
  known[key] = runs;
  return runs;
}
#endif

// Scores a block of query rows holds at most off the CPU: 256 MiB of float32, a few such
// temporaries at the peak (scores, capped scores, the masked copy, the probabilities).
constexpr int64_t kMaxBlockScores = int64_t{1} << 26;

// softmax(softcap(scale q k^T)) v with explicit scores in `work`, over blocks of query rows: each
// block of rows [r, r + n) reads only the keys its rows can see, [hip::first_visible_key(first + r,
// window), first + r + n), and holds at most max_scores scores (0: every row in one block). The
// query heads of one KV group share its keys: they are folded into the block's rows.
at::Tensor explicit_attention(const AttentionCall& call, at::ScalarType work, int64_t max_scores) {
  const AttentionMath& math = call.math;
  const int64_t heads = call.q.size(0), T = call.q.size(1), dim = call.q.size(2);
  const int64_t kv_heads = call.k.size(0), group = heads / kv_heads, keys = call.k.size(1);
  const double scale = math.scale_for(dim), cap = math.softcap;
  const int64_t block_keys = std::max<int64_t>(1, math.window > 0 ? std::min(keys, math.window + T) : keys);
  const int64_t rows = max_scores <= 0 ? T : std::max<int64_t>(1, std::min(T, max_scores / (heads * block_keys)));
  std::vector<at::Tensor> pieces;
  for (int64_t r = 0; r < T; r += rows) {
    const int64_t n = std::min(rows, T - r), first = call.first_position + r;
    const int64_t lo = hip::first_visible_key(first, math.window), hi = first + n;  // keys [lo, hi)
    at::Tensor q = call.q.narrow(1, r, n).reshape({kv_heads, group * n, dim}).to(work);
    at::Tensor scores = at::matmul(q, call.k.narrow(1, lo, hi - lo).to(work).transpose(1, 2));  // [kv_heads, group*n, hi-lo]
    scores.mul_(scale);
    if (cap > 0.0) scores = at::tanh(scores / cap) * cap;
    if (n > 1) {
      // Row i (position first + i) sees keys [hip::first_visible_key(first + i, W), first + i]:
      // none after itself, none before its window (a single row's keys are exactly [lo, first]);
      // the window's test below is that rule on every row at once.
      const at::Tensor row_pos = at::arange(first, first + n, scores.options().dtype(at::kLong));
      const at::Tensor key_pos = at::arange(lo, hi, row_pos.options());
      at::Tensor hidden = key_pos.unsqueeze(0) > row_pos.unsqueeze(1);  // [n, hi-lo]
      if (math.window > 0) hidden = hidden.logical_or(key_pos.unsqueeze(0) <= row_pos.unsqueeze(1) - math.window);
      scores = scores.view({kv_heads, group, n, hi - lo})
                   .masked_fill(hidden, -std::numeric_limits<double>::infinity())
                   .view({kv_heads, group * n, hi - lo});
    }
    const at::Tensor probs = at::softmax(scores, -1);
    const at::Tensor v = call.v.narrow(1, lo, hi - lo);
    pieces.push_back(work == at::kDouble ? at::matmul(probs, v.to(work)).to(call.v.scalar_type()).view({heads, n, dim})
                                         : at::matmul(probs.to(call.v.scalar_type()), v).view({heads, n, dim}));
  }
  return pieces.size() == 1 ? pieces.front() : at::cat(pieces, 1);
}

}  // namespace

bool DenseAttention::fused_on(const c10::Device& device) {
#if TORCH_VERSION_MAJOR >= 2
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

at::ScalarType DenseAttention::score_type(const c10::Device& device, at::ScalarType dtype) {
  return device.is_cpu() && dtype == at::kFloat ? at::kDouble : at::kFloat;
}

bool DenseAttention::decodes_in_graph(const at::Tensor& q, const at::Tensor& k) {
#ifdef HIPSTUDIO_FLASH_DECODE_IN_GRAPH
  const auto dtype = q.scalar_type();
  const int64_t d = q.size(-1);
  if (!(q.is_cuda() && k.device() == q.device() && (dtype == at::kBFloat16 || dtype == at::kHalf) &&
        k.scalar_type() == dtype && d % 8 == 0 && d <= 256 && q.dim() == 3 && k.dim() == 3 &&
        q.size(0) % k.size(0) == 0 && q.size(1) == 1 && k.size(1) < (int64_t{1} << 31)))
    return false;
  // LibTorch's flash attention runs on sm_80 and newer (an older GPU decodes eagerly, through SDPA's
  // other kernels), where this LibTorch was built with it.
  return at::cuda::getDeviceProperties(q.device().index())->major >= 8 && flash_decode_runs(q.device(), dtype);
#else
  (void)q, (void)k;
  return false;
#endif
}

GraphedAttention DenseAttention::prepare_graphed_decode(const at::Tensor& q, const at::Tensor& k) {
  // Asked before every graphed step: decided once per form of the graphs' tensors (the device's
  // properties and the flash check are not asked again each step).
  const DecodeGraphForm form = DecodeGraphForm::of(q, k);
  if (form == form_) return plan_;
  form_ = form;
  plan_ = {};
  if (!decodes_in_graph(q, k)) return plan_;
  const int64_t capacity = k.size(1);
  if (!(key_offsets_.defined() && key_offsets_.device() == k.device() && offsets_capacity_ == capacity)) {
    const auto i32 = at::TensorOptions().dtype(at::kInt);
    query_offsets_ = at::tensor({0, 1}, i32).to(k.device());
    key_offsets_ = at::tensor({0, static_cast<int>(capacity)}, i32).to(k.device());
    offsets_capacity_ = capacity;
    offsets_id_ = next_graph_buffers_id();  // a graph captured with other offsets never matches
  }
  plan_ = {0, offsets_id_, false};
  return plan_;
}

GraphedStep DenseAttention::begin_graphed_step(int64_t, const GraphedAttention& plan, bool) {
  // No state of its own: every step of a graph captured under this plan replays it.
  return plan_.from_layer == 0 && plan == plan_ ? GraphedStep::kCached : GraphedStep::kNone;
}

at::Tensor DenseAttention::attend_in_graph(const AttentionCall& call, const at::Tensor&, void*) {
#ifdef HIPSTUDIO_FLASH_DECODE_IN_GRAPH
  if (!key_offsets_.defined() || !call.key_count.defined())
    throw std::logic_error("dense attention inside a decode graph needs prepare_graphed_decode and a key count");
  // The offsets say how many slots k holds: a cache of another capacity would be read past its end.
  if (call.k.size(1) != offsets_capacity_ || call.k.device() != key_offsets_.device())
    throw std::logic_error("dense attention inside a decode graph: the cache is not the one prepare_graphed_decode saw");
  const int64_t heads = call.q.size(0), d = call.q.size(2), capacity = call.k.size(1);
  // One sequence of one query row over the whole cache; flash folds the query heads of each KV
  // group into rows and splits the keys, as for attend()'s decode step, and stops at key_count.
  // The graph runs on LibTorch's current stream, the capture's.
  const auto result = at::_flash_attention_forward(
      call.q.reshape({1, heads, d}), call.k.transpose(0, 1), call.v.transpose(0, 1), query_offsets_, key_offsets_,
      /*max_q=*/1, /*max_k=*/capacity, /*dropout_p=*/0.0, /*is_causal=*/false, /*return_debug_mask=*/false,
      /*scale=*/std::nullopt, /*window_size_left=*/std::nullopt, /*window_size_right=*/std::nullopt,
      /*seqused_k=*/call.key_count);
  // Flash's own output, not copied into call.out: a copy node a layer (~1 us) the dense baseline
  // would pay and HiP's sparse layers not (kernels/BENCHMARKS_HISTORY.md).
  return std::get<0>(result).reshape({heads, 1, d});
#else
  (void)call;
  throw std::logic_error("dense attention inside a decode graph needs LibTorch 2.5 or later");
#endif
}

namespace {

// Whether flash's variable-length form takes this batch in one call: the layer's maths full
// attention without a soft-cap, the device fields set, and the form decodes_in_graph asks.
bool flash_takes_batch(const BatchAttentionCall& call) {
  if (call.math.window != 0 || call.math.softcap != 0.0 || !call.key_offsets.defined()) return false;
  const int64_t batch = call.q.size(0), heads = call.q.size(1), d = call.q.size(3);
  // decodes_in_graph asks the form (device, dtype, head_dim, grouping); the rows' bound is the key count's.
  return DenseAttention::decodes_in_graph(call.q.reshape({batch, heads, d}).select(0, 0).unsqueeze(1), call.k);
}

// The batch in one call of flash's variable-length form, where flash_takes_batch: [B, n_heads,
// head_dim]. Sequence i's keys are rows [key_offsets[i], key_offsets[i + 1]) of the storage, of
// which flash reads the first key_counts[i] (seqused_k), both read on the device when the kernel
// runs (a graph replays them); query heads of a KV group fold into rows and the keys split as in
// the batch-1 graphed call. The split count flash picks depends on the batch and the longest slot,
// so a sequence's output may round differently from its batch-1 step's (a different split of its
// keys' softmax sums), never more than that; the eager and the graphed batched call are one call.
at::Tensor flash_batch(const BatchAttentionCall& call) {
#ifdef HIPSTUDIO_FLASH_DECODE_IN_GRAPH
  const int64_t batch = call.q.size(0), heads = call.q.size(1), d = call.q.size(3);
  const at::Tensor q = call.q.reshape({batch, heads, d});  // one query row a sequence
  int64_t longest = 0;
  for (const int64_t capacity : call.capacities) longest = std::max(longest, capacity);
  const auto result = at::_flash_attention_forward(
      q.contiguous(), call.k.transpose(0, 1), call.v.transpose(0, 1), call.query_offsets, call.key_offsets,
      /*max_q=*/1, /*max_k=*/longest, /*dropout_p=*/0.0, /*is_causal=*/false, /*return_debug_mask=*/false,
      /*scale=*/call.math.plain(d) ? std::nullopt : std::optional<double>(call.math.scale_for(d)),
      /*window_size_left=*/std::nullopt, /*window_size_right=*/std::nullopt, /*seqused_k=*/call.key_counts);
  return std::get<0>(result);  // [B, n_heads, head_dim]
#else
  (void)call;
  throw std::logic_error("dense attention of a batch in one call needs LibTorch 2.5 or later with CUDA");
#endif
}

}  // namespace

at::Tensor DenseAttention::attend_batch(const BatchAttentionCall& call, const std::vector<AttentionBackend*>&) {
  return flash_takes_batch(call) ? flash_batch(call) : at::Tensor();
}

BatchGraphedAttention DenseAttention::prepare_graphed_batch(const BatchAttentionCall& call,
                                                            const std::vector<AttentionBackend*>&) {
  BatchGraphedAttention plan;
  plan.graphed = flash_takes_batch(call);
  return plan;  // buffers 0: the call's tensors are the graphs' own
}

GraphedStep DenseAttention::begin_graphed_batch_step(const std::vector<int64_t>&, const BatchGraphedAttention& plan,
                                                     bool, const std::vector<AttentionBackend*>&, int64_t*) {
  return plan.graphed ? GraphedStep::kCached : GraphedStep::kNone;  // no state of its own
}

at::Tensor DenseAttention::attend_batch_in_graph(const BatchAttentionCall& call, const std::vector<AttentionBackend*>&,
                                                 void*) {
  // The graph runs on LibTorch's current stream, the capture's, where flash launches.
  if (!flash_takes_batch(call)) throw std::logic_error("dense attention of this batch cannot run inside a decode graph");
  return flash_batch(call);
}

at::Tensor DenseAttention::attend(const AttentionCall& call) {
#if TORCH_VERSION_MAJOR >= 2
  // LibTorch's fused kernels take full causal attention at any scale; a window or a soft-cap takes
  // the explicit form below, in blocks of query rows (never a T x T score matrix).
  if (fused_on(call.q.device()) && call.math.window == 0 && call.math.softcap == 0.0)
    return fused_attention(call, call.math.plain(call.q.size(2)) ? std::nullopt
                                                                 : std::optional<double>(call.math.scale_for(call.q.size(2))));
#endif
  // float32 on the CPU is accumulated in float64: attention is a small share of the work there and
  // this keeps dense and the float64 HiP reference comparable to 1e-5 on the logits. The CPU takes
  // every row at once (its callers chunk prompts); elsewhere a block holds at most kMaxBlockScores.
  const at::ScalarType work = score_type(call.q.device(), call.q.scalar_type());
  return explicit_attention(call, work, call.q.is_cpu() ? 0 : kMaxBlockScores);
}

}  // namespace hipstudio
