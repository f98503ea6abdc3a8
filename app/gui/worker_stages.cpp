// The worker's stages as one table: what each reads, when it is skipped, its cache key and how it
// runs. The scheduler (worker.cpp) walks the table in its order and knows no stage by name.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "app/gui/engine_jobs.h"
#include "app/gui/gui_messages.h"
#include "app/gui/worker.h"
#include "kernels/oracle.h"

namespace hipstudio::gui {


namespace {

constexpr uint32_t bit(int stage) { return uint32_t{1} << stage; }

bool no_model_behind(const Request& r) { return r.model.synthetic_tokens > 0 || r.model.capture_view != nullptr; }
bool synthetic_run(const Request& r) { return r.model.synthetic_tokens > 0; }

}  // namespace

// Run order: the viewed layer's views right after the prefill, before the decode steps (which none of
// them reads), so a parameter change puts the mask on screen without waiting for the decode half;
// the viewed layer's timing follows its views (the k, b_q, b_k change's "new latency"); then the
// layers above the viewed one on both sides (the prefill stops both after the viewed layer), which
// the decode half, the prompt's metrics and the other layers' views read; the other
// layers' views (the per-head table) follow the decode half, in the background; generation last.
const std::vector<Worker::StageDef>& Worker::stages() {
  const uint32_t model = bit(kStageModel), analysis = bit(kStageAnalysis), hip_rest = bit(kStageHipRest);
  static const std::vector<StageDef> table = {
      {kStageModel, "model", 0, 0, nullptr, false, false, false, nullptr, &Worker::run_model, false},
      {kStageAnalysis, "analysis", model, 0, nullptr, false, false, false, nullptr, &Worker::run_analysis, false},
      {kStageMasks, "masks", model | analysis, 0, nullptr, false, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer; }, &Worker::run_masks, false},
      {kStageTrace, "trace", model | analysis | bit(kStageMasks), 0, nullptr, false, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer << "|H" << r.head << "|Q" << r.query_block; },
       &Worker::run_trace, false},
      {kStageDense, "dense", model | analysis, 0, [](const Request& r) { return !r.want_dense; }, true, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer << "|H" << r.head << (r.want_dense ? "" : "|off"); },
       &Worker::run_dense, false},
      // The Side by side panel's methods: each one's mask of the viewed layer, beside the layer's own views.
      {kStageMethodMasks, "method masks", model | analysis | bit(kStageMasks), 0, nullptr, false, false, false,
       [](std::ostream& k, const Request& r) {
         k << "|L" << r.layer;
         for (const hip::methods::MethodChoice& m : r.compare_methods) {
           k << ',' << m.name;
           for (const auto& [name, value] : m.values) k << ':' << name << '=' << value;
         }
       },
       &Worker::run_method_masks, false},
      {kStageLocality, "locality", model | analysis, 0, nullptr, true, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer << "|H" << r.head << "|D" << r.delta << "|B" << r.bins; },
       &Worker::run_locality, false},
      {kStageLatency, "latency", model | analysis, 0, nullptr, false, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer << "|T" << r.latency_tokens; }, &Worker::run_latency, false},
      {kStageHipRest, "HiP layers", model | analysis, 0, nullptr, false, false, false, nullptr, &Worker::run_hip_rest, false},
      {kStageDecode, "decode", model | analysis | hip_rest, 0, nullptr, false, true, true, nullptr, &Worker::run_decode, false},
      // It makes the viewed layer's host copy first: the layer is in its key.
      {kStageViews, "layer views", model | analysis | hip_rest, 0, nullptr, false, false, false,
       [](std::ostream& k, const Request& r) { k << "|L" << r.layer; }, &Worker::run_views, false},
      {kStageOffload, "offload", model | analysis | hip_rest | bit(kStageDecode), 0, synthetic_run, false, true, true,
       [](std::ostream& k, const Request& r) { k << "|c" << r.cache_factor; }, &Worker::run_offload, false},
      // Generation reads only the model, but runs after the analysis so that the views come first; a
      // capture has no model behind it.
      {kStageGenerate, "generate", model, analysis | bit(kStageDecode),
       [](const Request& r) { return r.generate_id == 0 || no_model_behind(r); }, false, true, false,
       [](std::ostream& k, const Request& r) { k << "|G" << r.generate_id << '|' << r.generate_tokens; },
       &Worker::run_generate, true},
      // The Sweep panel's sweep: its own paired run, when asked, after the views and the decode half.
      {kStageSweep, "sweep", model, analysis | bit(kStageDecode),
       [](const Request& r) { return r.sweep_id == 0 || no_model_behind(r); }, false, true, true,
       [](std::ostream& k, const Request& r) {
         k << "|W" << r.sweep_id << '|' << static_cast<int>(r.sweep_field);
         for (int64_t v : r.sweep_values) k << ',' << v;
         k << "|L" << r.sweep_views_layer;
       },
       &Worker::run_sweep, false},
      // The Methods panel's comparison: likewise its own paired run, when asked.
      {kStageMethods, "methods", model, analysis | bit(kStageDecode),
       [](const Request& r) { return r.methods_id == 0 || no_model_behind(r); }, false, true, true,
       [](std::ostream& k, const Request& r) {
         k << "|M" << r.methods_id;
         for (const hip::methods::MethodChoice& m : r.methods) {
           k << ',' << m.name;
           for (const auto& [name, value] : m.values) k << ':' << name << '=' << value;
         }
       },
       &Worker::run_methods, false},
  };
  return table;
}

const Worker::StageDef& Worker::stage_def(int stage) {
  for (const StageDef& d : stages())
    if (d.stage == stage) return d;
  throw std::logic_error("no stage " + std::to_string(stage));
}

const char* stage_name(int stage) {
  for (const Worker::StageDef& d : Worker::stages())
    if (d.stage == stage) return d.name;
  return "?";
}

// The model's identity; then (every stage but the model) the prompt and the HiP settings, or for a
// stage of dense_inputs_only on a layer no HiP setting reaches only the seed; then what only decoding
// reads, where the stage keys it; then the stage's own tail.
std::string stage_key(int stage, const Request& r) {
  const Worker::StageDef& d = Worker::stage_def(stage);
  std::ostringstream k;
  const auto& h = r.hip.hip;
  k << r.model.path << '|' << r.model.device << '|' << r.model.dtype << '|' << r.model.synthetic_tokens << '|'
    << r.model.reload << '|' << r.model.capture;
  if (stage == kStageModel) return k.str();
  k << "|P" << std::hash<std::string>{}(r.prompt) << '|' << r.prompt.size();
  if (d.dense_inputs_only && !layer_inputs_follow_hip(r)) {
    // The layer reads the dense layers' output: the prompt decides it (and the seed, which draws a
    // synthetic run's inputs).
    k << "|dense inputs|s" << r.seed;
  } else {
    k << "|h" << h.k << ',' << h.b_q << ',' << h.b_k << ',' << h.b_sq << ',' << h.b_sk << ',' << h.sink << ','
      << h.window << ',' << h.rho << "|ld" << r.hip.dense_layers << "|s" << r.seed << "|room" << decode_room(r);
  }
  if (d.keys_decode) k << "|rm" << r.hip.refresh_every;
  if (d.keys_steps) k << "|n" << r.decode_steps;
  if (d.key_rest) d.key_rest(k, r);
  return k.str();
}

void Worker::run_model(const Request& r, StageRun&) {
  ModelInfo info;
  std::shared_ptr<const LoadedModel> model;
  if (r.model.capture_view) {
    info = r.model.capture_view->model;
  } else if (r.model.synthetic_tokens > 0) {
    info = synthetic_analysis(std::min<int64_t>(r.model.synthetic_tokens, 8), r)->model;
    info.display_name = "synthetic " + std::to_string(r.model.synthetic_tokens) + "-token Q/K (no model)";
    info.max_seq_len = r.model.synthetic_tokens;
  } else {
    release_prefill();  // its KV caches live on the old model's device
    model = load_model_job(r.model, info);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  model_ = model;
  prefill_.reset();
  prompt_view_.reset();
  current_.model = std::make_shared<const ModelInfo>(info);
}

void Worker::run_analysis(const Request& r, StageRun& run) {
  std::shared_ptr<const AnalysisView> a;
  std::shared_ptr<PrefillHandle> prefill;
  if (r.model.capture_view) {
    a = r.model.capture_view;
  } else if (r.model.synthetic_tokens > 0) {
    a = synthetic_analysis(r.model.synthetic_tokens, r);
  } else {
    if (prefill_ && prefill_dense_key_ == dense_prefill_key(r)) {
      // Only what the HiP side reads changed: its prefill alone, against the same dense one.
      try {
        a = rerun_hip_job(*prefill_, *current_.model, r, run.progress);
        prefill = prefill_;
      } catch (const Cancelled&) {
        release_prefill();  // half re-run: it decodes no more
        throw;
      } catch (const std::exception& e) {
        // E.g. out of memory beside the results on screen: a whole prefill plans its memory
        // (and keeps the viewed layer's inputs only where all do not fit).
        std::fprintf(stderr, "hipstudio gui: the HiP-only prefill failed (%s); running both prefills\n", e.what());
        release_prefill();
      }
    }
    if (!a) {
      release_prefill();  // two prefills' caches would double the run's memory at length
      PrefillJob job = prefill_job(*model_, *current_.model, r, run.progress);
      prefill = job.prefill;
      a = job.view;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  prefill_dense_key_ = prefill ? dense_prefill_key(r) : std::string();
  prefill_ = prefill;
  prompt_view_ = a;
  prefill_decoded_ = false;
  current_.analysis = a;
}

void Worker::run_hip_rest(const Request&, StageRun& run) {
  // Gives way between layers to a newly picked layer's or head's views (it starts over from the
  // viewed layer when it runs again).
  if (!prefill_ || !hip_pending_job(*prefill_)) return;
  finish_hip_rest([&](double f, const std::string& what) {
    if (earlier_stage_wanted(run.stage)) throw GiveWay();
    return run.progress(f, what);
  });
}

void Worker::run_decode(const Request& r, StageRun& run) {
  // A capture or a synthetic run has no model behind it: its analysis is already whole.
  if (no_model_behind(r)) return;
  if (!prefill_) throw std::logic_error("the decode steps have no prefill to run from");
  // The greedy steps (seconds at length) give way between steps to a newly picked layer's or head's
  // views and run again after them (each run starts over from the prompt's end).
  std::shared_ptr<const AnalysisView> a = decode_job(*prefill_, *prompt_view_, r, [&](double f, const std::string& what) {
    if (earlier_stage_wanted(run.stage)) throw GiveWay();
    return run.progress(f, what);
  });
  std::lock_guard<std::mutex> lock(mutex_);
  current_.analysis = a;
  auto history = std::make_shared<std::vector<LatencySample>>(
      current_.latency_history ? *current_.latency_history : std::vector<LatencySample>{});
  history->push_back(latency_sample(*a->analysis));
  history->back().new_prefill = !prefill_decoded_;
  prefill_decoded_ = true;
  current_.latency_history = std::move(history);
}

void Worker::run_masks(const Request& r, StageRun& run) {
  const Request rc = clamp_selection(*current_.analysis, r);
  const PairedAnalysis& shown = *current_.analysis->analysis;
  if (prefill_ && shown.hip_partial() && rc.layer > shown.hip_through_layer && shown.options.keeps(rc.layer) &&
      hip_pending_job(*prefill_))
    finish_hip_rest(run.progress);  // a layer above where the HiP side stopped: the rest of it now
  if (prefill_ && !current_.analysis->has_inputs(rc.layer)) {
    // A long prompt keeps the viewed layer's inputs only: another layer needs a prefill that keeps
    // it (the analysis stage runs again for the request's layer, then the views).
    std::lock_guard<std::mutex> lock(mutex_);
    done_key_[kStageAnalysis].clear();
    throw GiveWay();
  }
  // A layer whose views the prefill deferred and the background has not reached yet: now.
  if (views_deferred(rc.layer)) add_deferred_views(rc.layer);
  auto m = compute_layer_masks(current_.analysis, rc);
  std::lock_guard<std::mutex> lock(mutex_);
  current_.masks = m;
}

void Worker::run_trace(const Request& r, StageRun&) {
  const Request rc = clamp_selection(*current_.analysis, r);
  const LayerMaskSnapshot& m = *current_.masks;
  const LayerInputs* in = m.source->analysis->find_inputs(m.layer);
  std::optional<DeviceTrace> dev;
  if (in) dev = device_trace_job(*in, m.params, rc.head, rc.query_block);
  auto t = dev ? compute_trace(m, rc, trace_view_of(m.layer, m.params, std::move(dev->trace), std::move(dev->oracle_scores), "CUDA kernels"))
               : compute_trace(m, rc);
  std::lock_guard<std::mutex> lock(mutex_);
  current_.trace = t;
}

void Worker::run_dense(const Request& r, StageRun&) {
  const Request rc = clamp_selection(*current_.analysis, r);
  const LayerInputs* in = current_.analysis->analysis->find_inputs(rc.layer);
  std::optional<PooledProbabilities> pooled;
  if (in) pooled = device_dense_job(*in, current_.analysis->layer_math(rc.layer), rc.head, kDenseImageSide);
  std::shared_ptr<const DenseView> d;
  if (pooled) {
    viz::HeatGrid grid;
    grid.rows = pooled->rows;
    grid.cols = pooled->cols;
    grid.values = std::move(pooled->values);
    d = compute_dense(rc, std::move(grid), "device, max-pooled");
  } else {
    d = compute_dense(*current_.analysis, rc);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  current_.dense = d;
}

void Worker::run_locality(const Request& r, StageRun&) {
  const Request rc = clamp_selection(*current_.analysis, r);
  const LayerInputs* in = current_.analysis->analysis->find_inputs(rc.layer);
  std::optional<hip::ScoreLocality> on_device;
  if (in) {
    const hip::LocalitySample sample = locality_sample(rc, in->tokens);
    on_device = device_locality_job(*in, rc.head, sample.rows, sample.params);
  }
  auto l = on_device ? compute_locality(rc, *on_device, "computed on the device") : compute_locality(*current_.analysis, rc);
  std::lock_guard<std::mutex> lock(mutex_);
  current_.locality = l;
}

void Worker::run_latency(const Request& r, StageRun& run) {
  auto v = std::make_shared<LatencyView>();
  const Request rc = clamp_selection(*current_.analysis, r);
  v->layer = rc.layer;
  v->requested_tokens = r.latency_tokens;
  if (model_ && !no_model_behind(r))
    v->timing = latency_job(*model_, current_.analysis->analysis->find_inputs(rc.layer), current_.analysis->analysis->options.hip.hip,
                            r.latency_tokens, [&] {
                              if (earlier_stage_wanted(run.stage)) throw GiveWay();  // a new head's views first
                              return keep_going(run.stage, run.key);
                            });
  std::lock_guard<std::mutex> lock(mutex_);
  current_.latency = v;
}

void Worker::run_views(const Request& r, StageRun& run) {
  // The deferred layers one at a time, each published as it lands; it gives way to a newly picked
  // layer's or head's views between layers (the finished ones stay) and stops on a cancel. First the
  // viewed layer's host copy (the hover values read it; every view of it is computed on the device),
  // then the deferred layers.
  if (const LayerInputs* in = current_.analysis->analysis->find_inputs(clamp_selection(*current_.analysis, r).layer))
    if (!in->host_ready()) (void)in->host();
  const std::vector<int64_t> pending = current_.analysis->views_pending();
  size_t done = 0;
  for (int64_t layer : pending) {
    checkpoint(run);
    if (views_deferred(layer)) add_deferred_views(layer, [&] { checkpoint(run); });  // a few tenths of a second at 32k
    run.progress(static_cast<double>(++done) / static_cast<double>(pending.size()), "layer views, layer " + std::to_string(layer));
  }
}

void Worker::run_offload(const Request& r, StageRun& run) {
  // The replay takes seconds at length and reads no layer: it gives way to the views of a newly
  // picked layer or head (it runs again after them), and stops on a cancel.
  auto o = compute_offload(*current_.analysis, r, [&] { checkpoint(run); });
  std::lock_guard<std::mutex> lock(mutex_);
  current_.offload = o;
}

void Worker::run_generate(const Request& r, StageRun& run) {
  generate_job(*model_, *current_.model, r, [&](const GenerateView& g) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_.generate = std::make_shared<const GenerateView>(g);
      current_.fraction = static_cast<double>(g.dense_tokens + g.hip_tokens) / (2.0 * r.generate_tokens);
      publish_locked();
    }
    return keep_going(run.stage, run.key);
  });
}

void Worker::run_sweep(const Request& r, StageRun& run) {
  // One value after another against one dense prefill of its own (the one on screen stays); a cancel
  // or a new request stops it at the next progress check, and the last whole sweep stays on screen.
  auto v = sweep_job(*model_, *current_.model, r, run.progress);
  std::lock_guard<std::mutex> lock(mutex_);
  current_.sweep = v;
}

namespace {

// What identifies the run a layer's inputs came from (AnalysisView::prefill_identity), held weakly
// by the method masks' cache so that a freed run's address can never pass for a new one's.
std::shared_ptr<const void> run_identity(const AnalysisView& a) {
  if (a.prefill_run) return a.prefill_run;
  if (a.prompt_run) return a.prompt_run;
  return a.analysis;
}

std::string method_mask_key(const hip::methods::MethodChoice& c, const LayerMaskSnapshot& m) {
  std::ostringstream k;
  const hip::HipParams& p = m.params;
  k << c.name;
  for (const auto& [name, value] : c.values) k << ':' << name << '=' << value;
  k << "|L" << m.layer << "|h" << p.k << ',' << p.b_q << ',' << p.b_k << ',' << p.b_sq << ',' << p.b_sk << ',' << p.sink << ','
    << p.window << ',' << p.rho;
  return k.str();
}

}  // namespace

MethodMaskView Worker::method_mask_view(const hip::methods::MethodChoice& choice, const std::shared_ptr<const LayerMaskSnapshot>& m) {
  MethodMaskView v;
  v.method = choice;
  v.title = hip::methods::find_selection_method(choice.name).title;
  if (choice.is_hip() && choice.values.empty() && m->method == "hip") {
    // HiP's own mask: the layer views' (the forward pass's), as the mask view draws it.
    v.masks = m;
    v.reused = true;
    v.source = "the layer views";
    return v;
  }
  const std::string key = method_mask_key(choice, *m);
  std::shared_ptr<const MethodLayerMask> mask;
  if (auto hit = method_mask_cache_.find(key); hit != method_mask_cache_.end()) {
    mask = hit->second;
  } else if (choice.name == "oracle") {
    // The layer views computed the oracle already (on the device at any length; on the CPU up to
    // kOracleMaxTokens): recomputing it here would cost O(T^2 d) per head for the same mask.
    if (!m->has_oracle)
      throw std::runtime_error("the oracle of this layer was not computed (the CPU's views skip it above " +
                               std::to_string(kOracleMaxTokens) + " tokens)");
    auto own = std::make_shared<MethodLayerMask>();
    own->method = choice;
    own->layer = m->layer;
    own->params = m->params;
    own->mask = m->oracle;
    own->recall = hip::mask_recall(own->mask, m->oracle);
    own->source = "the layer views";
    mask = own;
  } else {
    const LayerInputs* in = m->source->analysis->find_inputs(m->layer);
    if (!in) throw std::runtime_error("the run did not keep layer " + std::to_string(m->layer) + "'s inputs");
    mask = std::make_shared<const MethodLayerMask>(method_mask_job(*in, choice, m->params, m->has_oracle ? &m->oracle : nullptr));
  }
  if (!method_mask_cache_.count(key)) {
    method_mask_cache_[key] = mask;
    method_mask_order_.push_back(key);
    while (method_mask_order_.size() > kMethodMaskCacheSize) {
      method_mask_cache_.erase(method_mask_order_.front());
      method_mask_order_.pop_front();
    }
  }
  v.masks = std::make_shared<const LayerMaskSnapshot>(m->views, m->source, mask);
  v.source = mask->source;
  v.reused = choice.name == "oracle";
  v.device_timing = mask->on_device;
  v.seconds = mask->seconds;
  return v;
}

void Worker::run_method_masks(const Request& r, StageRun& run) {
  // First every method whose mask is at hand (cached, or the layer views' own), published at once:
  // switching between compared methods only re-draws. Then the others one at a time, each
  // published as it lands (a method just added shows as soon as its mask is there, the rest stay
  // on screen meanwhile); a cancel or a newer request stops it between methods, and a newly picked
  // layer's or head's views come first. A method that cannot be computed says why in its own entry.
  const std::shared_ptr<const LayerMaskSnapshot> m = current_.masks;
  if (!m || !m->source) throw std::logic_error("the method masks have no layer views to stand beside");
  const std::shared_ptr<const void> identity = run_identity(*m->source);
  if (method_masks_run_.lock() != identity) {
    method_mask_cache_.clear();
    method_mask_order_.clear();
    method_masks_run_ = identity;
  }
  auto view = std::make_shared<MethodMasksView>();
  view->layer = m->layer;
  auto at_hand = [&](const hip::methods::MethodChoice& c) {
    return (c.is_hip() && c.values.empty() && m->method == "hip") || c.name == "oracle" ||
           method_mask_cache_.count(method_mask_key(c, *m)) > 0;
  };
  auto compute = [&](const hip::methods::MethodChoice& c) {
    MethodMaskView v;
    try {
      v = method_mask_view(c, m);
    } catch (const std::exception& e) {
      v = MethodMaskView{};
      v.method = c;
      v.title = c.name;
      v.error = in_gui_words(e.what());
    }
    return v;
  };
  auto publish = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.method_masks = std::make_shared<const MethodMasksView>(*view);
    publish_locked();
  };
  std::vector<size_t> missing;
  for (size_t i = 0; i < r.compare_methods.size(); ++i) {
    const hip::methods::MethodChoice& c = r.compare_methods[i];
    if (at_hand(c)) {
      view->methods.push_back(compute(c));
    } else {
      MethodMaskView pending;  // no masks, no error: "computing..."
      pending.method = c;
      pending.title = c.name;
      view->methods.push_back(std::move(pending));
      missing.push_back(i);
    }
  }
  if (!missing.empty()) publish();
  for (size_t j = 0; j < missing.size(); ++j) {
    const hip::methods::MethodChoice& c = r.compare_methods[missing[j]];
    checkpoint(run);
    run.progress(static_cast<double>(j) / static_cast<double>(missing.size()), "method masks, " + c.name);
    view->methods[missing[j]] = compute(c);
    if (j + 1 < missing.size()) publish();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  current_.method_masks = view;
}

void Worker::run_methods(const Request& r, StageRun& run) {
  auto v = methods_job(*model_, *current_.model, r, run.progress);
  std::lock_guard<std::mutex> lock(mutex_);
  current_.methods = v;
}

}  // namespace hipstudio::gui
