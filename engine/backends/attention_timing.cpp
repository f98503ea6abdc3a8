#include "engine/backends/attention_timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <mutex>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/formats/errors.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_timer.h"
#include "engine/analysis/kept_inputs.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/runtime/run_cancelled.h"
#include "kernels/torch/hip_torch.h"

namespace hipstudio {

namespace {

using hip_torch::DenseBackend;

TimedMs summarize(std::vector<double> ms) {
  TimedMs t;
  t.repeats = static_cast<int>(ms.size());
  if (ms.empty()) {
    t.median = t.spread = std::numeric_limits<double>::quiet_NaN();
    return t;
  }
  std::sort(ms.begin(), ms.end());
  // Quantiles by linear interpolation between order statistics (numpy's default).
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(ms.size() - 1);
    const auto lo = static_cast<size_t>(at);
    const size_t hi = std::min(lo + 1, ms.size() - 1);
    return ms[lo] + (at - static_cast<double>(lo)) * (ms[hi] - ms[lo]);
  };
  t.median = quantile(0.5);
  t.spread = 0.5 * (quantile(0.75) - quantile(0.25));
  return t;
}

template <class F>
double event_ms(F&& fn) {
  DeviceTimer timer(true);
  timer.start();
  fn();
  return timer.stop_seconds() * 1e3;
}

// The fastest dense backend that runs `call` (a few warmed-up calls each); kAuto with NaN if none does.
// keep_going (may be empty) is asked between calls: at 128k tokens the trials take seconds.
// *transient: a backend failed for lack of memory (the choice may differ another time).
template <class F>
DenseBackend fastest_dense(F&& call, const std::function<bool()>& keep_going, bool* transient) {
  DenseBackend best = DenseBackend::kAuto;
  double best_ms = std::numeric_limits<double>::infinity();
  if (!hip_torch::dense_attention_supported()) return best;
  auto check = [&] {
    if (keep_going && !keep_going()) throw RunCancelled();
  };
  for (DenseBackend b : {DenseBackend::kFlash, DenseBackend::kCuDNN, DenseBackend::kEfficient}) {
    check();
    try {
      call(b);  // warm-up (plans, workspaces)
    } catch (const c10::Error& e) {
      if (is_out_of_memory(e)) *transient = true;
      continue;  // this backend does not run these shapes here (e.g. cuDNN's SDPA without its library)
    } catch (const std::exception&) {
      continue;
    }
    double ms = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 3; ++i) {
      check();
      ms = std::min(ms, event_ms([&] { call(b); }));
    }
    if (ms < best_ms) best_ms = ms, best = b;
  }
  return best;
}

// The fastest backend of a shape, found once per process: every knob change times the same dense
// shapes again, and trying each backend (cuDNN plans every new shape) took longer than the timing
// itself (0.3-0.6 s of a 32k layer's 0.6-1.2 s). The dense side is still timed on every call.
using ShapeKey = std::tuple<std::string, int, int, std::vector<int64_t>, std::vector<int64_t>>;
template <class F>
DenseBackend fastest_dense_cached(const std::string& kind, const at::Tensor& q, const at::Tensor& k,
                                  const std::function<bool()>& keep_going, F&& call) {
  static std::mutex mutex;
  static std::map<ShapeKey, DenseBackend> found;
  const ShapeKey key{kind, static_cast<int>(q.scalar_type()), static_cast<int>(q.get_device()), q.sizes().vec(),
                     k.sizes().vec()};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = found.find(key);
    if (it != found.end()) return it->second;
  }
  bool transient = false;
  const DenseBackend best = fastest_dense(std::forward<F>(call), keep_going, &transient);
  if (transient || best == DenseBackend::kAuto) return best;  // not a lasting answer: tried again next time
  std::lock_guard<std::mutex> lock(mutex);
  found[key] = best;
  return best;
}

}  // namespace

AttentionTiming time_attention(const at::Tensor& q3, const at::Tensor& k3, const at::Tensor& v3, const hip::HipParams& p,
                               const TimingOptions& options) {
  if (!q3.is_cuda()) throw InputError("attention timing needs CUDA tensors: the CPU path is a correctness reference");
  c10::InferenceMode inference;
  hip::validate_hip_params(p);
  const int64_t hq = q3.size(0), T = q3.size(1);
  AttentionTiming out;
  out.tokens = T;
  out.heads = hq;
  out.kv_heads = k3.size(0);
  out.dim = q3.size(2);
  out.device = device_description(RunDevice{q3.device(), q3.scalar_type()});
  out.dtype = std::string(c10::toString(q3.scalar_type()));
  out.warmup = options.warmup;
  const at::Tensor q = q3.unsqueeze(0), k = k3.unsqueeze(0), v = v3.unsqueeze(0);
  const at::Tensor q1 = q.narrow(2, T - 1, 1);  // the decode step's query: the last position

  // Prefill: the whole prompt, causal. Dense SDPA wants the KV heads expanded (hip_torch.h).
  hip_torch::MaskTensors masks = hip_torch::estimate_masks(q, k, p);
  at::Tensor out_prefill = at::empty_like(q);
  const at::Tensor ke = hip_torch::expand_kv_heads(k, hq), ve = hip_torch::expand_kv_heads(v, hq);
  const DenseBackend prefill_backend =
      fastest_dense_cached("prefill", q, k, options.keep_going, [&](DenseBackend b) { hip_torch::dense_attention(q, ke, ve, true, b); });
  // Decode: one query over every key, GQA folded into rows (no copy).
  hip_torch::MaskTensors step_masks = hip_torch::estimate_masks(q1, k, p);
  at::Tensor out_step = at::empty_like(q1);
  const DenseBackend decode_backend =
      fastest_dense_cached("decode", q1, k, options.keep_going, [&](DenseBackend b) { hip_torch::dense_decode(q1, k, v, b); });
  out.dense_prefill_backend = prefill_backend == DenseBackend::kAuto ? "none" : hip_torch::dense_backend_name(prefill_backend);
  out.dense_decode_backend = decode_backend == DenseBackend::kAuto ? "none" : hip_torch::dense_backend_name(decode_backend);

  struct Part {
    std::function<void()> run;
    std::vector<double> ms;
  };
  std::vector<Part> hip_parts = {
      {[&] { hip_torch::estimate_masks_into(masks, q, k, p); }, {}},
      {[&] { hip_torch::sparse_attention(q, k, v, masks.blocks, masks.counts, p, {}, 0, out_prefill); }, {}},
      {[&] { hip_torch::estimate_masks_into(step_masks, q1, k, p); }, {}},
      {[&] { hip_torch::sparse_attention(q1, k, v, step_masks.blocks, step_masks.counts, p, {}, 0, out_step); }, {}},
  };
  std::vector<Part> dense_parts;
  if (prefill_backend != DenseBackend::kAuto)
    dense_parts.push_back({[&] { hip_torch::dense_attention(q, ke, ve, true, prefill_backend); }, {}});
  if (decode_backend != DenseBackend::kAuto)
    dense_parts.push_back({[&] { hip_torch::dense_decode(q1, k, v, decode_backend); }, {}});
  for (int w = 0; w < options.warmup; ++w) {
    for (Part& part : hip_parts) part.run();
    for (Part& part : dense_parts) part.run();
  }
  for (int r = 0; r < options.repeats; ++r) {
    if (options.keep_going && !options.keep_going()) throw RunCancelled();
    auto side = [](std::vector<Part>& parts) {
      for (Part& part : parts) part.ms.push_back(event_ms(part.run));
    };
    if (r % 2 == 0) {
      side(hip_parts);
      side(dense_parts);
    } else {
      side(dense_parts);
      side(hip_parts);
    }
  }
  out.prefill_mask = summarize(hip_parts[0].ms);
  out.prefill_sparse = summarize(hip_parts[1].ms);
  out.decode_mask = summarize(hip_parts[2].ms);
  out.decode_sparse = summarize(hip_parts[3].ms);
  size_t d = 0;
  out.prefill_dense = prefill_backend != DenseBackend::kAuto ? summarize(dense_parts[d++].ms) : summarize({});
  out.decode_dense = decode_backend != DenseBackend::kAuto ? summarize(dense_parts[d++].ms) : summarize({});
  return out;
}

std::optional<AttentionTiming> time_layer_attention(const LayerInputs& inputs, const hip::HipParams& p,
                                                    const TimingOptions& options) {
  const auto* kept = dynamic_cast<const TensorLayerInputs*>(inputs.source());
  if (!kept || !kept->q().is_cuda()) return std::nullopt;
  AttentionTiming t = time_attention(kept->q(), kept->k(), kept->v(), p, options);
  t.layer = inputs.layer;
  return t;
}

std::optional<AttentionTiming> time_attention_at_length(const Model& model, int64_t tokens, const hip::HipParams& p,
                                                        const TimingOptions& options) {
  if (!model.run.device.is_cuda()) return std::nullopt;
  if (tokens < 2) throw InputError("the timing length must be at least 2 tokens");
  c10::InferenceMode inference;
  const ModelConfig& c = model.config;
  const auto opts = at::TensorOptions().device(model.run.device).dtype(model.run.dtype);
  const at::Tensor q = at::randn({c.n_heads, tokens, c.head_dim}, opts);
  const at::Tensor k = at::randn({c.n_kv_heads, tokens, c.head_dim}, opts);
  const at::Tensor v = at::randn({c.n_kv_heads, tokens, c.head_dim}, opts);
  return time_attention(q, k, v, p, options);
}

}  // namespace hipstudio
