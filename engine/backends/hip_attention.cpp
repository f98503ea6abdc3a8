#include "engine/backends/hip_attention.h"
#include "engine/backends/method_rows.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>

#include "engine/runtime/device_timer.h"
#include "engine/analysis/host_inputs.h"
#include "engine/model/layer_math.h"
#include "kernels/attention_inputs.h"
#include "kernels/search_range.h"
#include "kernels/shape_only_inputs.h"
#include "kernels/torch/hip_torch.h"
#include "kernels/key_set.h"
#include "kernels/methods/torch/tensor_selection.h"
#include "kernels/oracle.h"
#include "kernels/parallel_for.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The (head, query block 0) trace requests of every head: a decode step has one query block.
hip::MaskOptions trace_every_head(int64_t heads) {
  hip::MaskOptions options;
  for (int64_t h = 0; h < heads; ++h) options.trace.push_back({h, 0});
  return options;
}

// Keys read by the hierarchical search of one head: the sampled keys of every scored branch's
// representative block, from its trace. The representative blocks are sorted rather than their
// keys (b_k / b_sk times fewer): at 32k tokens sorting every head's keys took ~10 ms a layer, most
// of a decode refresh step's recording.
std::vector<int32_t> search_keys(const hip::MaskTrace& trace, const hip::HipParams& p) {
  std::vector<int32_t> blocks;
  for (const hip::TraceIteration& iteration : trace.iterations)
    for (const hip::TraceBranch& branch : iteration.branches) blocks.push_back(static_cast<int32_t>(branch.repr));
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  // A block's sampled keys lie inside it, so ascending blocks give ascending, distinct keys.
  std::vector<int32_t> out;
  out.reserve(blocks.size() * static_cast<size_t>(p.b_k / p.b_sk));
  for (int32_t block : blocks)
    for (int64_t u = 0; u < p.b_k / p.b_sk; ++u) out.push_back(static_cast<int32_t>(block * p.b_k + u * p.b_sk));
  return out;
}

}  // namespace

bool hip_replaces(const AttentionMath& math, int64_t layer, int64_t dense_layers) {
  return math.window == 0 && math.rank_of(layer) >= dense_layers;
}

bool hip_replaces_layer(const ModelConfig& config, int64_t dense_layers, int64_t layer) {
  return hip_replaces(layer_attention_math(config, layer), layer, dense_layers);
}

int64_t first_hip_layer(const ModelConfig& config, int64_t dense_layers) {
  for (int64_t l = 0; l < config.n_layers; ++l)
    if (hip_replaces_layer(config, dense_layers, l)) return l;
  return config.n_layers;
}

void validate_hip_model_params(const HipModelParams& params) {
  hip::validate_hip_params(params.hip);
  if (params.dense_layers < 0) throw hip::HipParamError("l_d (" + std::to_string(params.dense_layers) + ") must be >= 0");
  if (params.refresh_every < 1) throw hip::HipParamError("r_m (" + std::to_string(params.refresh_every) + ") must be >= 1");
  if (!params.hip.causal) throw hip::HipParamError("HiP inside a language model must be causal");
  try {
    hip::methods::validate_choice(params.method, params.hip);
  } catch (const hip::methods::MethodError& e) {
    throw hip::HipParamError(e.what());
  }
}

HipAttention::HipAttention(const HipModelParams& params, int64_t n_layers) : params_(params), layers_(n_layers) {
  validate_hip_model_params(params_);
  method_ = &hip::methods::find_selection_method(params_.method.name);
  const int64_t b = method_->block_tokens(params_.hip, params_.method.values);
  method_gap_ = b > params_.hip.b_k ? b / params_.hip.b_k - 1 : 0;
}

hip::HipParams HipAttention::mask_params() const {
  hip::HipParams p = params_.hip;
  p.k = mask_kb() * p.b_k;
  return p;
}

bool HipAttention::method_on_cuda() {
  return params_.method.is_hip() ? cuda_ready() : cuda_ready() && hip::methods::find_tensor_selection(method_->name);
}

hip_torch::MaskTensors HipAttention::method_masks_cuda(const AttentionCall& call, LayerState& state, at::Tensor* own_blocks) {
  const hip::methods::SelectionContext ctx = hip::methods::choice_context(params_.method, params_.hip, call.layer);
  const hip::methods::TensorInputs in{call.q, call.k, at::Tensor()};
  // A prefill call (the prompt or one chunk of it) keeps the state its rows give for the decode
  // refreshes that follow: the last chunk's, which holds the prompt's last rows.
  if (!call.decoding) state.method_state = hip::methods::decode_state(*method_, in, ctx);
  const hip::methods::MethodMaskTensors m = hip::methods::select_for_decode(*method_, in, ctx, state.method_state.get());
  if (own_blocks) *own_blocks = m.blocks;
  // The rows the kernels read attend what the method's mask means (method_rows.h).
  const MethodRows rows = method_rows(m.blocks, m.counts, m.dense_from, params_.hip, method_gap_, call.q.size(1),
                                      call.k.size(1));
  hip_torch::MaskTensors out;
  out.blocks = rows.blocks;
  out.counts = rows.counts;
  out.iterations = at::zeros_like(m.counts);
  out.branches = at::zeros(m.counts.sizes(), m.counts.options().dtype(at::kLong));
  return out;
}

void HipAttention::reset() {
  // The decode masks go; what a method keeps from the prompt stays for decodes from the same
  // prefill (the next prefill call replaces it).
  for (LayerState& s : layers_) {
    std::shared_ptr<const hip::methods::MethodState> prompt = std::move(s.method_state);
    s = LayerState{};
    s.method_state = std::move(prompt);
  }
}

void HipAttention::set_refresh_every(int64_t refresh_every) {
  HipModelParams next = params_;
  next.refresh_every = refresh_every;
  validate_hip_model_params(next);
  params_ = next;
  reset();
}

bool HipAttention::cuda_ready() {
  if (cuda_ready_ < 0) {
    const std::string why = hip_torch::cuda_kernels_status();
    cuda_ready_ = why.empty() ? 1 : 0;
    backend_note_ = why.empty() ? "HiP CUDA kernels" : "HiP CPU reference (CUDA kernels unavailable: " + why + ")";
  }
  return cuda_ready_ == 1;
}

bool HipAttention::replaces(const AttentionCall& call) const {
  return hip_replaces(call.math, call.layer, params_.dense_layers);
}

bool HipAttention::needs_refresh(const LayerState& state) const {
  return !state.valid || state.steps_since_refresh >= params_.refresh_every;
}

int64_t HipAttention::cached_extra(const LayerState& state, int64_t position) const {
  const int64_t extra = hip::search_hi(params_.hip, position) - state.refresh_hi;
  if (extra < 0 || extra > tail_room()) throw std::logic_error("HiP decode: the cached mask's dense tail outgrew its room");
  return extra;
}

hip::HipParams HipAttention::widened_params() const {
  hip::HipParams widened = params_.hip;
  widened.k = (mask_kb() + tail_room()) * params_.hip.b_k;
  return widened;
}

void HipAttention::ensure_decode_buffers(int64_t heads, const c10::Device& device) {
  const int64_t layers = static_cast<int64_t>(layers_.size()), kb = mask_kb(), room = tail_room();
  const std::vector<int64_t> rows_shape{layers, heads, 1, kb + room};
  // A device without an index ("cuda") means the current one, where the buffers were made.
  const bool same_device = buffers_.rows.defined() && buffers_.rows.device().type() == device.type() &&
                           (!device.has_index() || buffers_.rows.device().index() == device.index());
  if (same_device && buffers_.rows.sizes().vec() == rows_shape) return;
  const auto i32 = at::TensorOptions().device(device).dtype(at::kInt);
  buffers_ = DecodeBuffers{};
  buffers_.rows = at::full(rows_shape, -1, i32);
  buffers_.counts_by_extra = at::zeros({layers, room + 1, heads, 1}, i32);
  buffers_.counts_now = at::zeros({layers, heads, 1}, i32);
  for (int64_t l = 0; l < layers; ++l) {
    buffers_.layer_rows.push_back(buffers_.rows.select(0, l));
    buffers_.layer_counts_by_extra.push_back(buffers_.counts_by_extra.select(0, l));
  }
  for (int64_t e = 0; e <= room; ++e) buffers_.counts_for_extra.push_back(buffers_.counts_by_extra.select(1, e));
  // Unique in the process (next_graph_buffers_id): a graph captured for another backend (or for
  // buffers since freed) never matches a new one.
  buffers_.generation = next_graph_buffers_id();
  for (LayerState& s : layers_) s.valid = false;  // their rows lived in the old buffers
}

bool HipAttention::graphable(const c10::Device& device) {
  return device.is_cuda() && params_.method.is_hip() && params_.dense_layers < static_cast<int64_t>(layers_.size()) &&
         !observer_ && !record_access_ && !sync_timing_ && cuda_ready();
}

GraphedAttention HipAttention::prepare_graphed_decode(const at::Tensor& q, const at::Tensor& k) {
  if (!graphable(q.device())) return {};
  ensure_decode_buffers(q.size(0), q.device());
  // Asked again only for other graphs' tensors (this runs before every graphed step, and the
  // same buffers may serve another model's graphs): the answer depends on their form alone.
  const DecodeGraphForm asked = DecodeGraphForm::of(q, k);
  if (!(asked == buffers_.refresh_asked)) {
    buffers_.refresh_in_graph = hip_torch::refresh_in_decode_graph_supported(q, k, params_.hip);
    buffers_.refresh_asked = asked;
  }
  // The dense layers inside the capture too where the dense attention can be: a capture then bakes
  // in the dense side's offsets as well, so the plan's identity covers both buffer generations.
  GraphedAttention plan{params_.dense_layers, buffers_.generation, buffers_.refresh_in_graph};
  if (params_.dense_layers > 0) {
    const GraphedAttention dense = dense_.prepare_graphed_decode(q, k);
    if (dense.from_layer == 0) {
      plan.from_layer = 0;
      plan.buffers = (buffers_.generation << 32) ^ dense.buffers;
    }
  }
  buffers_.plan = plan;
  return plan;
}

void HipAttention::note_refresh(LayerState& state, int64_t layer, int64_t position) {
  state.refresh_hi = hip::search_hi(params_.hip, position);
  state.gpu_rows = buffers_.layer_rows.at(static_cast<size_t>(layer));
  state.gpu_counts_by_extra = buffers_.layer_counts_by_extra.at(static_cast<size_t>(layer));
  state.valid = true;
  state.steps_since_refresh = 0;
}

bool HipAttention::next_step_refreshes_graphed_layers() const {
  for (size_t l = static_cast<size_t>(params_.dense_layers); l < layers_.size(); ++l)
    if (!needs_refresh(layers_[l])) return false;
  return true;
}

GraphedStep HipAttention::begin_graphed_step(int64_t position, const GraphedAttention& plan, bool refresh_captured) {
  buffers_.pending_extra = -1;
  // graphable: the kernels serve the sparse layers, and there is at least one.
  if (!buffers_.rows.defined() || !graphable(buffers_.rows.device()) || !(plan == buffers_.plan) ||
      buffers_.rows.size(3) != mask_kb() + tail_room())  // rows made for another k or r_m
    return GraphedStep::kNone;
  const size_t first = static_cast<size_t>(params_.dense_layers);
  // The layers refresh together: all of them at this step (a refresh capture), or none (each reuses
  // its cached mask, whose tail has moved by the same number of blocks in every layer).
  if (needs_refresh(layers_[first])) {
    if (!refresh_captured || !plan.refreshes || !next_step_refreshes_graphed_layers()) return GraphedStep::kNone;
    // The eager refresh's bookkeeping (attend_cuda); the capture writes each layer's rows.
    for (size_t l = first; l < layers_.size(); ++l) {
      note_refresh(layers_[l], static_cast<int64_t>(l), position);
      ++layers_[l].steps_since_refresh;
    }
    return GraphedStep::kRefresh;
  }
  int64_t extra = -1;
  for (size_t l = first; l < layers_.size(); ++l) {
    const LayerState& s = layers_[l];
    if (needs_refresh(s)) return GraphedStep::kNone;
    const int64_t e = cached_extra(s, position);
    if (extra >= 0 && e != extra) return GraphedStep::kNone;
    extra = e;
  }
  buffers_.pending_extra = extra;  // copied by before_graphed_layers
  for (size_t l = first; l < layers_.size(); ++l) ++layers_[l].steps_since_refresh;
  return GraphedStep::kCached;
}

void HipAttention::before_graphed_layers(int64_t, int64_t end) {
  if (buffers_.pending_extra < 0 || end <= params_.dense_layers) return;
  buffers_.counts_now.copy_(buffers_.counts_for_extra.at(static_cast<size_t>(buffers_.pending_extra)));  // one launch, every layer
  buffers_.pending_extra = -1;
}

at::Tensor HipAttention::attend_in_graph(const AttentionCall& call, const at::Tensor& position, void* stream) {
  if (call.layer < params_.dense_layers && buffers_.plan.from_layer == 0)
    return dense_.attend_in_graph(call, position, stream);  // no mask, no refresh: the dense layers' own call
  if (call.layer < params_.dense_layers || !buffers_.rows.defined())
    throw std::logic_error("HiP: layer " + std::to_string(call.layer) + " cannot attend inside a decode graph");
  const hip::HipParams widened = widened_params();
  const at::Tensor& rows = buffers_.layer_rows.at(static_cast<size_t>(call.layer));
  const at::Tensor& counts_by_extra = buffers_.layer_counts_by_extra.at(static_cast<size_t>(call.layer));
  // A refresh attends its fresh rows at extra 0; a cached step the counts before_graphed_layers copied.
  const at::Tensor counts = call.refresh_in_graph ? counts_by_extra.select(0, 0) : buffers_.counts_now.select(0, call.layer);
  if (call.refresh_in_graph) {
    if (!buffers_.refresh_in_graph) throw std::logic_error("HiP: this backend's refresh cannot run inside a decode graph");
    hip_torch::DecodeRows fresh{rows, counts_by_extra};
    // The search reads Q, the new key and the position, as the attention's early start would.
    hip_torch::refresh_decode_rows_on_stream(call.q, call.k, params_.hip, position, fresh, tail_room(), stream,
                                             /*after_prior=*/call.follows_query_write);
  }
  if (!buffers_.workspace_made) {  // before any capture: the graph warms every launch up eagerly first
    buffers_.workspace = hip_torch::sparse_attention_workspace(call.q, call.k, call.v, rows, counts, widened, position, call.out);
    buffers_.workspace_made = true;
  }
  // A cached step's rows and counts are in place before the graph holding this layer is launched
  // (the counts copied by before_graphed_layers ahead of it), so where the call follows its query's
  // write the kernel may overlap it; a refresh's come from the search just before.
  hip_torch::sparse_attention_on_stream(call.q, call.k, call.v, rows, counts, widened, position, call.out, buffers_.workspace,
                                        stream, /*mask_before_prior_kernel=*/call.follows_query_write && !call.refresh_in_graph);
  return call.out;
}

at::Tensor HipAttention::attend(const AttentionCall& call) {
  HipLayerEvent event;
  event.layer = call.layer;
  event.first_position = call.first_position;
  event.queries = call.q.size(1);
  event.call = &call;

  if (!replaces(call)) {
    event.dense = true;
    const auto start = std::chrono::steady_clock::now();
    at::Tensor out = dense_.attend(call);
    event.attention_seconds = seconds_since(start);
    if (observer_) observer_(event);
    return out;
  }

  LayerState& state = layers_.at(static_cast<size_t>(call.layer));
  bool use_cuda = false;
  if (call.q.is_cuda()) {
    use_cuda = method_on_cuda();
    if (!use_cuda && !params_.method.is_hip())
      backend_note_ = method_->title + " CPU reference (float64): " +
                      (cuda_ready() ? "the method has no tensor implementation" : backend_note_);
  } else {
    backend_note_ = method_->title + " CPU reference (float64)";
  }
  at::Tensor out = use_cuda ? attend_cuda(call, state, event) : attend_reference(call, state, event);
  if (observer_) observer_(event);
  return out;
}

at::Tensor HipAttention::attend_reference(const AttentionCall& call, LayerState& state, HipLayerEvent& event) {
  HostAttentionInputs host(call.q, call.k, call.v);
  hip::MaskResult prefill_mask;
  const hip::MaskResult* mask = nullptr;
  const bool record = record_access_ && call.decoding;
  std::vector<hip::MaskTrace> traces;  // of a recorded refresh: the keys the search read
  auto select = [&] {
    if (!params_.method.is_hip()) {
      // The registry's reference; a prefill call keeps its state for the decode refreshes (as
      // method_masks_cuda does).
      const hip::methods::SelectionContext ctx = hip::methods::choice_context(params_.method, params_.hip, call.layer);
      if (!call.decoding) state.method_state = hip::methods::decode_state(*method_, host.view, ctx);
      return hip::methods::select_for_decode(*method_, host.view, ctx, state.method_state.get());
    }
    // One search serves both the mask and, when recording, its trace.
    hip::MaskEstimate estimate =
        hip::estimate_masks_reference(host.view, params_.hip, record ? trace_every_head(host.view.hq) : hip::MaskOptions{});
    traces = std::move(estimate.traces);
    return std::move(estimate.mask);
  };

  auto start = std::chrono::steady_clock::now();
  if (!call.decoding) {
    // Prefill: a fresh mask for every query block; the first decode step then refreshes.
    prefill_mask = select();
    mask = &prefill_mask;
    state.valid = false;
    event.refreshed = true;
  } else {
    if (needs_refresh(state)) {
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
  const hip::AttentionOutput out =
      hip::sparse_attention_reference(host.view, params_.hip, *mask, 0, {call.math.scale, call.math.softcap});
  at::Tensor result = at::from_blob(const_cast<double*>(out.out.data()), {out.heads, out.tq, out.d}, at::kDouble)
                          .to(call.q.device(), call.q.scalar_type());
  event.attention_seconds = seconds_since(start);
  event.mask = mask;
  if (record) {
    const auto recording = std::chrono::steady_clock::now();
    record_access(host.view, *mask, traces, event);
    event.record_seconds = seconds_since(recording);
  }
  return result;
}

void HipAttention::record_access(const hip::AttentionInputs& view, const hip::MaskResult& mask,
                                 const std::vector<hip::MaskTrace>& traces, HipLayerEvent& event) {
  // One trace per searched head (a decode step's one query block); a head without one searched
  // nothing and reads no keys for the search.
  std::vector<const hip::MaskTrace*> trace_of(static_cast<size_t>(view.hq), nullptr);
  for (const hip::MaskTrace& trace : traces) {
    if (trace.head < 0 || trace.head >= view.hq || trace_of[static_cast<size_t>(trace.head)])
      throw std::logic_error("HiP access recording: expected one trace per head");
    trace_of[static_cast<size_t>(trace.head)] = &trace;
  }
  event.mask_keys.assign(static_cast<size_t>(view.hq), {});
  event.sparse_keys.assign(static_cast<size_t>(view.hq), {});
  // Threads for a refresh's searches only: a cached step's key lists take ~50 us in all, less than
  // starting the threads.
  hip::parallel_for(view.hq, traces.empty() ? 1 : hip::kFewThreads, [&](int64_t h, int) {
    const size_t i = static_cast<size_t>(h);
    if (trace_of[i]) event.mask_keys[i] = search_keys(*trace_of[i], params_.hip);
    std::vector<int64_t> keys;
    hip::attended_keys(view, params_.hip, mask, h, view.tq - 1, keys);
    event.sparse_keys[i].assign(keys.begin(), keys.end());
  });
}

hip_torch::MaskTensors HipAttention::refresh_cuda(const AttentionCall& call, LayerState& state) {
  const hip::HipParams& p = params_.hip;
  const hip_torch::MaskTensors masks =
      params_.method.is_hip() ? hip_torch::estimate_masks(call.q, call.k, p) : method_masks_cuda(call, state);
  // Row h: its selected blocks (ascending), then refresh_hi, refresh_hi + 1, ... from column
  // count_h on; all tail blocks lie above the selection, so rows stay ascending. One launch,
  // with every cached step's counts made in advance, into this layer's slice of the shared
  // buffers (where a decode graph reads them).
  ensure_decode_buffers(call.q.size(0), call.q.device());
  hip_torch::DecodeRows rows{buffers_.layer_rows.at(static_cast<size_t>(call.layer)),
                             buffers_.layer_counts_by_extra.at(static_cast<size_t>(call.layer))};
  hip_torch::decode_rows_into(rows, masks, hip::search_hi(p, call.first_position), tail_room(), nullptr);
  note_refresh(state, call.layer, call.first_position);  // once its rows are written
  return masks;
}

namespace {

bool same_params(const HipModelParams& a, const HipModelParams& b) {
  const hip::HipParams &x = a.hip, &y = b.hip;
  return x.k == y.k && x.b_q == y.b_q && x.b_k == y.b_k && x.b_sq == y.b_sq && x.b_sk == y.b_sk && x.sink == y.sink &&
         x.window == y.window && x.rho == y.rho && x.causal == y.causal && a.dense_layers == b.dense_layers &&
         a.refresh_every == b.refresh_every && a.method.name == b.method.name &&
         a.method.values == b.method.values;
}

}  // namespace

std::vector<HipAttention*> HipAttention::batch_peers(const at::Tensor& q, const std::vector<AttentionBackend*>& sequences) {
  // Every sequence's backend a HiP backend of these parameters whose sparse layers the CUDA kernels
  // serve with no host copy of the mask (no access recording), one object per sequence.
  std::vector<HipAttention*> hips;
  for (AttentionBackend* backend : sequences) {
    auto* hip = dynamic_cast<HipAttention*>(backend);
    if (!hip || !same_params(hip->params_, params_) || !q.is_cuda() || hip->record_access_ ||
        !params_.method.is_hip() || !hip->cuda_ready())
      return {};
    for (const HipAttention* seen : hips)
      if (seen == hip) return {};  // one backend twice would share its cached masks
    hips.push_back(hip);
  }
  if (hips.empty() || hips.front() != this) return {};
  return hips;
}

at::Tensor HipAttention::attend_batch(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences) {
  const std::vector<HipAttention*> hips = batch_peers(call.q, sequences);
  if (hips.empty() || call.layer >= static_cast<int64_t>(layers_.size())) return {};
  const int64_t batch = call.q.size(0);
  // With per-call timing (bench model's breakdown run), each sequence's refresh search is timed
  // on its own and the one launch as a whole; each observer hears of its sequence's part, the
  // launch's time told to the first sequence's only (the events' attention seconds add up to it).
  DeviceTimer attention_time(sync_timing_);
  std::vector<HipLayerEvent> events(static_cast<size_t>(batch));
  std::vector<AttentionCall> alone;  // each sequence's call, made only for a refresh or an observer
  auto alone_call = [&](int64_t i) -> const AttentionCall& {
    if (alone.empty())
      for (int64_t j = 0; j < batch; ++j) alone.push_back(call.alone(j));
    return alone[static_cast<size_t>(i)];
  };
  auto tell = [&](at::Tensor out) {
    for (int64_t i = 0; i < batch; ++i) {
      HipAttention& hip = *hips[static_cast<size_t>(i)];
      if (!hip.observer_) continue;
      HipLayerEvent& e = events[static_cast<size_t>(i)];
      e.layer = call.layer;
      e.first_position = call.positions.at(static_cast<size_t>(i));
      e.queries = 1;
      e.call = &alone_call(i);
      hip.observer_(e);
    }
    return out;
  };
  if (!hip_replaces(call.math, call.layer, params_.dense_layers)) {  // the l_d dense layers: no mask
    if (sync_timing_) attention_time.start();
    const at::Tensor out = dense_.attend_batch(call, sequences);
    if (!out.defined()) return out;  // each sequence attends alone, as no state moved
    for (HipLayerEvent& e : events) e.dense = true;
    if (sync_timing_) events.front().attention_seconds = attention_time.stop_seconds();
    return tell(out);
  }

  // Each sequence's mask: refreshed where its r_m steps are up (its own search, into its own
  // buffers, as its batch-1 step), then the rows and the counts its step attends.
  std::vector<at::Tensor> rows, counts;
  for (int64_t i = 0; i < batch; ++i) {
    HipAttention& hip = *hips[static_cast<size_t>(i)];
    LayerState& state = hip.layers_.at(static_cast<size_t>(call.layer));
    if (hip.needs_refresh(state)) {
      DeviceTimer mask_time(hip.sync_timing_);
      if (hip.sync_timing_) mask_time.start();
      hip.refresh_cuda(alone_call(i), state);
      events[static_cast<size_t>(i)].refreshed = true;
      if (hip.sync_timing_) events[static_cast<size_t>(i)].mask_seconds = mask_time.stop_seconds();
    }
    ++state.steps_since_refresh;
    rows.push_back(state.gpu_rows);
    counts.push_back(state.gpu_counts_by_extra.select(0, hip.cached_extra(state, call.positions.at(static_cast<size_t>(i)))));
  }
  // One launch over every sequence's rows (two small copies gather them) and its own keys: the
  // kernel places each query at its key count, reading its keys from its slot's start.
  if (sync_timing_) attention_time.start();
  const at::Tensor out =
      hip_torch::sparse_attention_batch(call.q, call.k, call.v, at::stack(rows), at::stack(counts), widened_params(),
                                        call.key_counts, call.key_starts, /*num_splits=*/0, at::Tensor(),
                                        {call.math.scale, call.math.softcap})
          .reshape({batch, call.q.size(1), call.q.size(3)});
  if (sync_timing_) events.front().attention_seconds = attention_time.stop_seconds();
  return tell(out);
}

bool HipAttention::shares_batch_buffers(const std::vector<HipAttention*>& hips) const {
  if (!batch_ || batch_->members.size() != hips.size()) return false;
  for (size_t i = 0; i < hips.size(); ++i)
    if (batch_->members[i] != hips[i] || hips[i]->buffers_.batch_id != batch_->id ||
        hips[i]->buffers_.batch_slot != static_cast<int64_t>(i))
      return false;
  return true;
}

void HipAttention::adopt_batch_buffers(const BatchDecodeBuffers& batch, int64_t slot) {
  DecodeBuffers& d = buffers_;
  const at::Tensor rows = batch.rows.select(1, slot), counts_by_extra = batch.counts_by_extra.select(1, slot);
  if (d.rows.defined() && d.rows.sizes() == rows.sizes() && d.rows.device() == rows.device()) {
    rows.copy_(d.rows);  // the cached masks move with their rows
    counts_by_extra.copy_(d.counts_by_extra);
  }
  d.rows = rows;
  d.counts_by_extra = counts_by_extra;
  d.layer_rows.clear();
  d.layer_counts_by_extra.clear();
  d.counts_for_extra.clear();
  for (int64_t l = 0; l < rows.size(0); ++l) {
    d.layer_rows.push_back(rows.select(0, l));  // [l][slot]: contiguous (hq, 1, kb + tail_room)
    d.layer_counts_by_extra.push_back(counts_by_extra.select(0, l));
  }
  for (int64_t e = 0; e < counts_by_extra.size(1); ++e) d.counts_for_extra.push_back(counts_by_extra.select(1, e));
  // Captures of batch-1 graphs baked in the old addresses: a new identity makes them stale.
  d.generation = next_graph_buffers_id();
  d.plan = {};
  d.pending_extra = -1;
  d.batch_id = batch.id;
  d.batch_slot = slot;
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = layers_[l];
    if (!state.valid || !state.gpu_rows.defined()) continue;
    state.gpu_rows = d.layer_rows.at(l);
    state.gpu_counts_by_extra = d.layer_counts_by_extra.at(l);
  }
}

void HipAttention::share_batch_buffers(const std::vector<HipAttention*>& hips, int64_t heads, const c10::Device& device) {
  if (shares_batch_buffers(hips)) return;
  const int64_t layers = static_cast<int64_t>(layers_.size()), room = tail_room(), batch = static_cast<int64_t>(hips.size());
  const auto i32 = at::TensorOptions().device(device).dtype(at::kInt);
  auto shared = std::make_shared<BatchDecodeBuffers>();
  shared->id = next_graph_buffers_id();
  shared->members.assign(hips.begin(), hips.end());
  shared->rows = at::full({layers, batch, heads, 1, mask_kb() + room}, -1, i32);
  shared->counts_by_extra = at::zeros({layers, batch, room + 1, heads, 1}, i32);
  shared->counts_now = at::zeros({layers, batch, heads, 1}, i32);
  for (int64_t i = 0; i < batch; ++i) hips[static_cast<size_t>(i)]->adopt_batch_buffers(*shared, i);
  batch_ = std::move(shared);
}

BatchGraphedAttention HipAttention::prepare_graphed_batch(const BatchAttentionCall& call,
                                                          const std::vector<AttentionBackend*>& sequences) {
  const std::vector<HipAttention*> hips = batch_peers(call.q, sequences);
  if (hips.empty()) return {};
  for (HipAttention* hip : hips)
    if (!hip->graphable(call.q.device())) return {};
  // The l_d dense layers inside the graphs too, or no graphs: the step is captured whole.
  if (params_.dense_layers > 0 && !dense_.prepare_graphed_batch(call, sequences).graphed) return {};
  const int64_t heads = call.q.size(1);
  for (HipAttention* hip : hips) hip->ensure_decode_buffers(heads, call.q.device());
  const bool fresh = !shares_batch_buffers(hips);
  share_batch_buffers(hips, heads, call.q.device());
  BatchDecodeBuffers& b = *batch_;
  if (fresh) {
    // Each sequence's refresh reads its own slot's keys: asked of each one's form.
    b.refresh_in_graph = true;
    for (size_t i = 0; i < hips.size(); ++i)
      b.refresh_in_graph = b.refresh_in_graph &&
                           hip_torch::refresh_in_decode_graph_supported(
                               call.q.select(0, static_cast<int64_t>(i)),
                               call.k.narrow(1, call.starts.at(i), call.capacities.at(i)), params_.hip);
  }
  BatchGraphedAttention plan;
  plan.graphed = true;
  plan.buffers = b.id;
  plan.refreshes = b.refresh_in_graph;
  plan.step_values = static_cast<int64_t>(hips.size());  // each sequence's row of the counts' gather
  // A capture gathers each sequence's own counts at extra 0, which its rows always cover (another
  // sequence's counts could reach past its rows' blocks into their -1 padding).
  for (int64_t i = 0; i < plan.step_values; ++i) plan.capture_values.push_back(i * (tail_room() + 1));
  b.plan = plan;
  return plan;
}

GraphedStep HipAttention::begin_graphed_batch_step(const std::vector<int64_t>& positions, const BatchGraphedAttention& plan,
                                                   bool refresh_captured, const std::vector<AttentionBackend*>& sequences,
                                                   int64_t* step_values) {
  if (!batch_ || !(plan == batch_->plan) || !plan.graphed) return GraphedStep::kNone;
  const std::vector<HipAttention*> hips = batch_peers(batch_->counts_now, sequences);
  if (hips.empty() || !shares_batch_buffers(hips) || positions.size() != hips.size()) return GraphedStep::kNone;
  for (HipAttention* hip : hips)
    if (!hip->graphable(batch_->rows.device()) || hip->buffers_.rows.size(-1) != mask_kb() + tail_room())
      return GraphedStep::kNone;
  const size_t first = static_cast<size_t>(params_.dense_layers), layers = layers_.size();
  const int64_t room = tail_room();
  // Every sequence's layers refresh together at this step (the refresh capture), or none of them
  // does (each layer of a sequence reuses its cached mask, whose tail moved the same number of
  // blocks in every layer); anything else runs eagerly, before any state moves.
  if (needs_refresh(layers_[first])) {
    if (!refresh_captured || !plan.refreshes) return GraphedStep::kNone;
    for (const HipAttention* hip : hips)
      if (!hip->next_step_refreshes_graphed_layers()) return GraphedStep::kNone;
    for (size_t i = 0; i < hips.size(); ++i) {
      HipAttention& hip = *hips[i];
      for (size_t l = first; l < layers; ++l) {
        hip.note_refresh(hip.layers_[l], static_cast<int64_t>(l), positions[i]);  // the capture writes the rows
        ++hip.layers_[l].steps_since_refresh;
      }
      step_values[i] = static_cast<int64_t>(i) * (room + 1);  // a fresh mask's counts: extra 0
    }
    return GraphedStep::kRefresh;
  }
  std::vector<int64_t> extras(hips.size(), -1);
  for (size_t i = 0; i < hips.size(); ++i) {
    const HipAttention& hip = *hips[i];
    for (size_t l = first; l < layers; ++l) {
      const LayerState& state = hip.layers_[l];
      if (hip.needs_refresh(state)) return GraphedStep::kNone;
      const int64_t e = hip.cached_extra(state, positions[i]);
      if (extras[i] >= 0 && e != extras[i]) return GraphedStep::kNone;
      extras[i] = e;
    }
  }
  for (size_t i = 0; i < hips.size(); ++i) {
    for (size_t l = first; l < layers; ++l) ++hips[i]->layers_[l].steps_since_refresh;
    step_values[i] = static_cast<int64_t>(i) * (room + 1) + extras[i];
  }
  return GraphedStep::kCached;
}

at::Tensor HipAttention::attend_batch_in_graph(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences,
                                               void* stream) {
  if (!hip_replaces(call.math, call.layer, params_.dense_layers))
    return dense_.attend_batch_in_graph(call, sequences, stream);  // no mask, no refresh: flash over the slots
  if (!batch_ || !call.step_values.defined() || !call.device_positions.defined())
    throw std::logic_error("HiP: a batched graph's attention needs prepare_graphed_batch and the staged step values");
  const std::vector<HipAttention*> hips = batch_peers(call.q, sequences);
  if (hips.empty() || !shares_batch_buffers(hips))
    throw std::logic_error("HiP: the batch's backends do not hold the buffers prepare_graphed_batch made");
  BatchDecodeBuffers& b = *batch_;
  const int64_t l = call.layer, batch = call.q.size(0), room = tail_room(), layers = static_cast<int64_t>(layers_.size());
  const hip::HipParams widened = widened_params();
  // Each sequence's step counts are row i * (room + 1) + extra_i of its layer's count table (the
  // staged step values): a cached step gathers every sparse layer's at its first one, a refresh
  // step each layer's after that layer's searches.
  auto gather_counts = [&](int64_t first, int64_t count) {
    const at::Tensor by_extra = b.counts_by_extra.narrow(0, first, count).view({count, batch * (room + 1), b.counts_now.size(2), 1});
    at::Tensor into = b.counts_now.narrow(0, first, count);
    at::index_select_out(into, by_extra, 1, call.step_values);
  };
  if (call.refresh_in_graph) {
    if (!b.refresh_in_graph) throw std::logic_error("HiP: this batch's refreshes cannot run inside a decode graph");
    for (int64_t i = 0; i < batch; ++i) {
      const size_t s = static_cast<size_t>(i);
      HipAttention& hip = *hips[s];
      hip_torch::DecodeRows fresh{hip.buffers_.layer_rows.at(static_cast<size_t>(l)),
                                  hip.buffers_.layer_counts_by_extra.at(static_cast<size_t>(l))};
      // Its own slot's keys and its own position, read when the graph replays.
      hip_torch::refresh_decode_rows_on_stream(call.q.select(0, i), call.k.narrow(1, call.starts.at(s), call.capacities.at(s)),
                                               params_.hip, call.device_positions.narrow(0, i, 1), fresh, room, stream,
                                               /*after_prior=*/false);
    }
    gather_counts(l, 1);
  } else if (l == params_.dense_layers) {
    gather_counts(l, layers - l);
  }
  const at::Tensor rows = b.rows.select(0, l), counts = b.counts_now.select(0, l);  // (B, hq, 1, kb + room), (B, hq, 1)
  const at::Tensor out = at::empty(call.q.sizes(), call.q.options());  // inside the capture: one address every replay
  if (!b.workspace_made) {  // before any capture: the graph warms every launch up eagerly first
    b.workspace = hip_torch::sparse_attention_batch_workspace(call.q, call.k, call.v, rows, counts, widened, call.key_counts,
                                                              call.key_starts, out);
    b.workspace_made = true;
  }
  hip_torch::sparse_attention_batch_on_stream(call.q, call.k, call.v, rows, counts, widened, call.key_counts, call.key_starts,
                                              out, b.workspace, stream, {call.math.scale, call.math.softcap});
  return out.reshape({batch, call.q.size(1), call.q.size(3)});
}

at::Tensor HipAttention::attend_cuda(const AttentionCall& call, LayerState& state, HipLayerEvent& event) {
  const hip::HipParams& p = params_.hip;
  const bool need_host_mask = record_access_ && call.decoding;  // access streams cover decode steps
  // With sync_timing_, CUDA events time each part; otherwise the (asynchronous) launches are not
  // timed at all and the event reports 0.
  DeviceTimer mask_time(sync_timing_), attention_time(sync_timing_);
  auto start_span = [&](DeviceTimer& t) {
    if (sync_timing_) t.start();
  };
  auto span_seconds = [&](DeviceTimer& t) { return sync_timing_ ? t.stop_seconds() : 0.0; };
  const int64_t heads = call.q.size(0), kb = mask_kb();
  hip::MaskResult host_mask;
  at::Tensor out;
  // The layer's scale and soft-cap go to the sparse attention; the mask search ranks raw dot
  // products (the same top-k under a positive scale and the monotonic cap).
  const hip::ScoreTransform score{call.math.scale, call.math.softcap};
  start_span(mask_time);

  if (!call.decoding) {
    at::Tensor own_blocks;  // the method's own mask, what the views measure (without the rows' gap blocks)
    const hip_torch::MaskTensors masks = params_.method.is_hip() ? hip_torch::estimate_masks(call.q, call.k, p)
                                                                 : method_masks_cuda(call, state, &own_blocks);
    event.mask_seconds = span_seconds(mask_time);
    start_span(attention_time);
    out = hip_torch::sparse_attention(call.q, call.k, call.v, masks.blocks, masks.counts, mask_params(), at::Tensor(), 0,
                                      at::Tensor(), score);
    event.device_blocks = own_blocks.defined() ? own_blocks : masks.blocks;
    event.attention_seconds = span_seconds(attention_time);
    state.valid = false;
    event.refreshed = true;
  } else {
    profile_.begin(call.q.is_cuda());
    const int64_t position = call.first_position;
    if (needs_refresh(state)) {
      const hip_torch::MaskTensors masks = refresh_cuda(call, state);
      profile_.lap("refresh: mask");
      if (need_host_mask) {  // the access recorder reads the mask on the host (analysis runs only)
        const at::Tensor b = masks.blocks.to(at::kCPU).contiguous(), c = masks.counts.to(at::kCPU).contiguous();
        state.host_blocks.assign(b.data_ptr<int32_t>(), b.data_ptr<int32_t>() + heads * kb);
        state.host_counts.assign(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + heads);
        profile_.lap("refresh: mask to host");
      }
      event.refreshed = true;
    }
    ++state.steps_since_refresh;
    // A cached mask keeps its dense tail start: the kernel derives the tail from the query's own
    // position, so the key blocks the tail has moved past since the refresh are attended from the
    // row's tail columns. Together they attend exactly sink + blocks + [refresh dense_from,
    // position], as the reference does.
    const int64_t extra = cached_extra(state, position);
    const hip::HipParams widened = widened_params();
    const at::Tensor block_counts = state.gpu_counts_by_extra.select(0, extra);  // a view: no launch
    event.mask_seconds = span_seconds(mask_time);  // the refresh (a cached step launches nothing here)
    start_span(attention_time);
    const bool into_out = call.out.defined() && call.out.is_contiguous() && call.out.sizes() == call.q.sizes() &&
                          call.out.scalar_type() == call.q.scalar_type() && call.out.device() == call.q.device();
    out = hip_torch::sparse_attention(call.q, call.k, call.v, state.gpu_rows, block_counts, widened, at::Tensor(),
                                      /*num_splits=*/0, into_out ? call.out : at::Tensor(), score);
    event.attention_seconds = span_seconds(attention_time);
    profile_.lap("sparse attention");
    if (need_host_mask) {
      // The refresh's mask as the reference keeps it: the original blocks and the refresh dense_from.
      host_mask.heads = heads;
      host_mask.query_blocks = 1;
      host_mask.kb = kb;
      host_mask.blocks = state.host_blocks;
      host_mask.counts = state.host_counts;
      host_mask.dense_from = {state.refresh_hi * p.b_k};
      host_mask.iterations.assign(static_cast<size_t>(heads), 0);
      host_mask.branches.assign(static_cast<size_t>(heads), 0);
    }
  }
  if (need_host_mask) {
    state.decode_mask = host_mask;
    event.mask = &state.decode_mask;
    // The keys the refresh's search read come from the kernels' own traces (every head's in one
    // traced launch of a decode-sized search); the keys attention read from the mask and the shapes.
    // Nothing copies K/V to the host: at 32k tokens that copy and a CPU search took seconds a step.
    const auto recording = std::chrono::steady_clock::now();
    std::vector<hip::MaskTrace> traces;
    if (event.refreshed) traces = hip_torch::estimate_masks_traced_every_head(call.q, call.k, p, 0).second;
    if (call.decoding) profile_.lap("refresh: every head's trace");
    record_access(hip::shape_only_inputs(heads, call.k.size(0), call.q.size(1), call.k.size(1), call.q.size(2)), host_mask,
                  traces, event);
    event.record_seconds = seconds_since(recording);  // the traced launches synchronize
    if (call.decoding) profile_.lap("record access");
  }
  return out;
}

}  // namespace hipstudio
