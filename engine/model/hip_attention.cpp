#include "engine/model/hip_attention.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "kernels/attention_inputs.h"
#include "kernels/key_set.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// float32, contiguous, CPU copies of one call's tensors, and the reference's view over them.
struct HostInputs {
  at::Tensor q, k, v;
  hip::AttentionInputs view;
  explicit HostInputs(const AttentionCall& call) {
    q = call.q.to(at::kCPU, at::kFloat).contiguous();
    k = call.k.to(at::kCPU, at::kFloat).contiguous();
    v = call.v.to(at::kCPU, at::kFloat).contiguous();
    view.q = q.data_ptr<float>();
    view.k = k.data_ptr<float>();
    view.v = v.data_ptr<float>();
    view.hq = q.size(0);
    view.tq = q.size(1);
    view.d = q.size(2);
    view.hkv = k.size(0);
    view.tk = k.size(1);
    // positions stay implicit: query i is at tk - tq + i = first_position + i.
  }
};

// Keys read by the hierarchical search of query block 0 for each head: the sampled keys of every
// scored branch's representative block, from the traces.
std::vector<std::vector<int32_t>> search_keys(const hip::AttentionInputs& in, const hip::HipParams& p) {
  hip::MaskOptions options;
  for (int64_t h = 0; h < in.hq; ++h) options.trace.push_back({h, 0});
  const hip::MaskEstimate estimate = hip::estimate_masks(in, p, options);
  std::vector<std::vector<int32_t>> keys(static_cast<size_t>(in.hq));
  for (const hip::MaskTrace& trace : estimate.traces) {
    std::vector<int32_t>& out = keys[static_cast<size_t>(trace.head)];
    for (const hip::TraceIteration& iteration : trace.iterations)
      for (const hip::TraceBranch& branch : iteration.branches)
        for (int64_t u = 0; u < p.b_k / p.b_sk; ++u) out.push_back(static_cast<int32_t>(branch.repr * p.b_k + u * p.b_sk));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return keys;
}

}  // namespace

void validate_hip_model_params(const HipModelParams& params) {
  hip::validate_hip_params(params.hip);
  if (params.dense_layers < 0) throw hip::HipParamError("l_d (" + std::to_string(params.dense_layers) + ") must be >= 0");
  if (params.refresh_every < 1) throw hip::HipParamError("r_m (" + std::to_string(params.refresh_every) + ") must be >= 1");
  if (!params.hip.causal) throw hip::HipParamError("HiP inside a language model must be causal");
}

HipAttention::HipAttention(const HipModelParams& params, int64_t n_layers) : params_(params), layers_(n_layers) {
  validate_hip_model_params(params_);
}

void HipAttention::reset() {
  for (LayerState& s : layers_) s = LayerState{};
}

at::Tensor HipAttention::attend(const AttentionCall& call) {
  HipLayerEvent event;
  event.layer = call.layer;
  event.first_position = call.first_position;
  event.queries = call.q.size(1);
  event.call = &call;

  if (call.layer < params_.dense_layers) {
    event.dense = true;
    const auto start = std::chrono::steady_clock::now();
    at::Tensor out = dense_.attend(call);
    event.attention_seconds = seconds_since(start);
    if (observer_) observer_(event);
    return out;
  }

  HostInputs host(call);
  LayerState& state = layers_.at(static_cast<size_t>(call.layer));
  const bool decoding = call.decoding;
  hip::MaskResult prefill_mask;
  const hip::MaskResult* mask = nullptr;

  auto select = [&] {
    switch (params_.selection) {
      case BlockSelection::Random: return hip::random_masks(host.view, params_.hip, params_.random_seed + call.layer);
      case BlockSelection::Oracle: return hip::oracle_masks(host.view, params_.hip);
      case BlockSelection::Hip: break;
    }
    return hip::estimate_masks(host.view, params_.hip).mask;
  };

  auto start = std::chrono::steady_clock::now();
  if (!decoding) {
    // Prefill: a fresh mask for every query block; the first decode step then refreshes.
    prefill_mask = select();
    mask = &prefill_mask;
    state.valid = false;
    event.refreshed = true;
  } else {
    if (!state.valid || state.steps_since_refresh >= params_.refresh_every) {
      state.decode_mask = select();
      state.valid = true;
      state.steps_since_refresh = 0;
      event.refreshed = true;
    }
    ++state.steps_since_refresh;
    mask = &state.decode_mask;
  }
  event.mask_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  const hip::AttentionOutput out = hip::sparse_attention_reference(host.view, params_.hip, *mask);
  at::Tensor result = at::from_blob(const_cast<double*>(out.out.data()), {out.heads, out.tq, out.d}, at::kDouble)
                          .to(call.q.device(), call.q.scalar_type());
  event.attention_seconds = seconds_since(start);
  event.mask = mask;
  if (record_access_) {
    if (event.refreshed && params_.selection == BlockSelection::Hip) event.mask_keys = search_keys(host.view, params_.hip);
    else event.mask_keys.assign(static_cast<size_t>(host.view.hq), {});
    std::vector<int64_t> keys;
    for (int64_t h = 0; h < host.view.hq; ++h) {
      hip::attended_keys(host.view, params_.hip, *mask, h, host.view.tq - 1, keys);
      event.sparse_keys.emplace_back(keys.begin(), keys.end());
    }
  }
  if (observer_) observer_(event);
  return result;
}

}  // namespace hipstudio
