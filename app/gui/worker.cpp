#include "app/gui/worker.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>

#include "app/gui/engine_jobs.h"
#include "app/gui/gui_messages.h"

namespace hipstudio::gui {

LatencySample latency_sample(const PairedAnalysis& pa) {
  LatencySample smp;
  smp.hip_ms = pa.hip.latency.prefill.total();
  smp.dense_ms = pa.dense.latency.prefill.total();
  smp.mask_ms = pa.hip.latency.prefill.mask;
  smp.sparse_ms = pa.hip.latency.prefill.sparse;
  smp.hip_step_ms = pa.hip.latency.decode_step.total();
  smp.dense_step_ms = pa.dense.latency.decode_step.total();
  smp.k = pa.options.hip.hip.k;
  smp.refresh_every = pa.options.hip.refresh_every;
  smp.decode_steps = pa.options.decode_steps;
  return smp;
}

namespace {

// Whether stage `later` computes from stage `earlier`'s result: every stage from the model's, the
// decode half and the views (not generation) from the prefill's, the offloading replay from the
// decode steps' access streams, the trace from the masks. The scheduler waits for these, and a new
// result of `earlier` makes `later`'s stale.
// The order stale stages run in: the viewed layer's views right after the prefill, before the decode
// steps (which none of them reads), so a parameter change puts the mask on screen without waiting
// for the decode half; generation last.
// The other layers' views (the per-head table) follow the decode half, in the background.
// The viewed layer's timing follows its views (the k, b_q, b_k change's "new latency"); then the HiP
// layers above the viewed one, which the decode half and the other layers' views read.
constexpr int kStagePriority[] = {kStageModel,   kStageAnalysis, kStageMasks,  kStageTrace, kStageDense,   kStageLocality,
                                  kStageLatency, kStageHipRest,  kStageDecode, kStageViews, kStageOffload, kStageGenerate};
static_assert(sizeof(kStagePriority) / sizeof(kStagePriority[0]) == kStageCount, "every stage has a place");

// Thrown by a stage's checkpoint when a stage before it in kStagePriority became wanted.
struct GiveWay {};

bool reads(int later, int earlier) {
  if (later <= earlier) return false;
  switch (earlier) {
    case kStageModel: return true;
    case kStageAnalysis: return later != kStageGenerate;
    case kStageDecode: return later == kStageOffload;
    case kStageHipRest: return later == kStageDecode || later == kStageViews || later == kStageOffload;
    case kStageMasks: return later == kStageTrace;
    default: return false;
  }
}

}  // namespace

Worker::Worker() {
  published_ = std::make_shared<Snapshot>(current_);
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    cancel_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Worker::submit(const Request& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool same = true;
  for (int s = 0; s < kStageCount && same; ++s) same = stage_key(s, r) == stage_key(s, request_);
  if (same && generation_ > 0) return;
  request_ = r;
  ++generation_;
  cancel_ = false;
  // A cancel stopped the work in flight, it did not judge its inputs: a request that changes
  // anything runs the cancelled stages again, even those whose own inputs it leaves alone (the
  // dense layers' locality keeps its key across a k change). A real failure holds until its inputs change.
  for (int s = 0; s < kStageCount; ++s)
    if (current_.error[s] == "cancelled") failed_key_[s].clear();
  wake_.notify_all();
}

void Worker::set_notify(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(mutex_);
  notify_ = std::move(notify);
}

void Worker::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancel_ = true;
}

bool Worker::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return served_generation_ == generation_;
}

std::shared_ptr<const Snapshot> Worker::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

bool Worker::runnable(int s, const Request& r, const std::array<std::string, kStageCount>& key) const {
  auto up_to_date = [&](int st) { return done_key_[st] == key[st]; };
  if (up_to_date(s) || failed_key_[s] == key[s]) return false;
  if (s == kStageGenerate && r.generate_id == 0) return false;
  if (s == kStageDense && !r.want_dense) return false;
  for (int e = 0; e < s; ++e)
    if (reads(s, e) && !up_to_date(e)) return false;  // its inputs are not there (yet, or they failed)
  // Generation reads only the model, but runs after the analysis so that the views come first.
  if (s == kStageGenerate && !(up_to_date(kStageAnalysis) && up_to_date(kStageDecode))) return false;
  const bool synthetic = r.model.synthetic_tokens > 0;
  if (synthetic && (s == kStageOffload || s == kStageGenerate)) return false;
  if (r.model.capture_view && s == kStageGenerate) return false;  // no model behind a capture
  return true;
}

bool Worker::earlier_stage_wanted(int stage) const {
  // Only a stage the scheduler would run next counts: one waiting on a failed input never runs, and
  // giving way to it would spin.
  std::lock_guard<std::mutex> lock(mutex_);
  std::array<std::string, kStageCount> key;
  for (int s = 0; s < kStageCount; ++s) key[s] = stage_key(s, request_);
  for (int s : kStagePriority) {
    if (s == stage) return false;
    if (runnable(s, request_, key)) return true;
  }
  return false;
}

void Worker::release_prefill() {
  // The last prefill's KV caches go before a model loads or the next prefill allocates; its results
  // on screen stay, but coming back to its settings runs it again.
  std::lock_guard<std::mutex> lock(mutex_);
  prefill_.reset();
  prompt_view_.reset();
  prefill_dense_key_.clear();
  done_key_[kStageAnalysis].clear();
}

bool Worker::views_deferred(int64_t layer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!prefill_ || !current_.analysis) return false;
  const auto& layers = current_.analysis->analysis->layers;
  return layer >= 0 && layer < static_cast<int64_t>(layers.size()) && layers[static_cast<size_t>(layer)].pending &&
         !current_.analysis->layer_quality(layer) && current_.analysis->has_inputs(layer);
}

void Worker::add_deferred_views(int64_t layer, const std::function<void()>& checkpoint) {
  auto computed = std::make_shared<const DeferredLayerViews>(deferred_views_job(*prefill_, layer, checkpoint));
  std::lock_guard<std::mutex> lock(mutex_);
  auto set = std::make_shared<DeferredViews>(prompt_view_->deferred ? *prompt_view_->deferred : DeferredViews{});
  (*set)[layer] = computed;
  auto with_set = [&](const std::shared_ptr<const AnalysisView>& v) {
    auto copy = std::make_shared<AnalysisView>(*v);
    copy->deferred = set;
    return std::shared_ptr<const AnalysisView>(copy);
  };
  // The analysis on screen is the prompt's view or a decode re-run of the same prefill.
  const bool same_prefill = current_.analysis && current_.analysis->prefill_identity() == prompt_view_->prefill_identity();
  prompt_view_ = with_set(prompt_view_);
  if (same_prefill) current_.analysis = with_set(current_.analysis);
}

void Worker::finish_hip_rest(const std::function<bool(double, const std::string&)>& progress) {
  std::shared_ptr<const AnalysisView> whole = finish_hip_job(*prefill_, *prompt_view_, progress);
  std::lock_guard<std::mutex> lock(mutex_);
  // The analysis on screen is the prompt's view (the decode half waits for this stage).
  const bool same_prefill = current_.analysis && current_.analysis->prefill_identity() == prompt_view_->prefill_identity();
  prompt_view_ = whole;
  if (same_prefill) current_.analysis = whole;
}

bool Worker::keep_going(int stage, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !stop_ && !cancel_ && stage_key(stage, request_) == key;
}

void Worker::publish_locked() {
  auto s = std::make_shared<Snapshot>(current_);
  s->version = published_->version + 1;
  for (int st = 0; st < kStageCount; ++st) {
    const std::string key = stage_key(st, request_);
    s->stale[st] = done_key_[st] != key;
    if (failed_key_[st] != key) s->error[st].clear();
  }
  published_ = s;
  if (notify_) notify_();
}

void Worker::run() {
  for (;;) {
    Request r;
    uint64_t generation;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_) return;
      r = request_;
      generation = generation_;
    }
    if (generation > 0 && step(r)) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    current_.busy = false;
    current_.running_stage = -1;
    publish_locked();
    served_generation_ = generation;
    wake_.wait(lock, [&] { return stop_ || generation_ != generation; });
  }
}

// Runs the first stage whose key differs from what it last computed (and did not just fail).
bool Worker::step(const Request& r) {
  std::array<std::string, kStageCount> key;
  for (int s = 0; s < kStageCount; ++s) key[s] = stage_key(s, r);
  {
    // A failure holds while the request keeps the inputs that failed; a request with other inputs
    // forgets it, so coming back to them runs again. (A cancel holds only until the next request
    // that changes anything: submit() forgets it there.)
    std::lock_guard<std::mutex> lock(mutex_);
    for (int s = 0; s < kStageCount; ++s)
      if (failed_key_[s] != key[s]) failed_key_[s].clear();
  }
  int stage = -1;
  for (int s : kStagePriority)
    if (runnable(s, r, key)) {
      stage = s;
      break;
    }
  if (stage < 0) return false;
  {
    // A cancel stops the worker, not just one stage: a stage without progress checks runs to its
    // end, but the next one is marked cancelled (so the status line says why it is stale) and
    // nothing starts until a request changes something (submit() clears the flag).
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return false;
    if (cancel_) {
      failed_key_[stage] = key[stage];
      current_.error[stage] = "cancelled";
      return false;  // run() publishes the idle snapshot
    }
  }

  // HIPSTUDIO_WORKER_TRACE=1: every new progress message of a stage on stderr, seconds since the
  // stage started (where a slow step's time goes; the device self-tests keep it in their logs).
  static const bool trace = std::getenv("HIPSTUDIO_WORKER_TRACE") != nullptr;
  std::string traced_what;
  const auto traced_start = std::chrono::steady_clock::now();
  auto progress = [&](double f, const std::string& what) {
    if (trace && what != traced_what) {
      traced_what = what;
      std::fprintf(stderr, "worker: %s +%.3f s %s\n", stage_name(stage),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - traced_start).count(), what.c_str());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_.busy = true;
      current_.running_stage = stage;
      current_.fraction = f;
      current_.what = what;
      publish_locked();
    }
    return keep_going(stage, key[stage]);
  };
  progress(0.0, std::string(stage_name(stage)) + "...");
  const auto stage_start = std::chrono::steady_clock::now();
  // Generation publishes its growing text; a cancelled or failed one puts the last complete result
  // back, so no half-written text is left on screen as if it were a result.
  const std::shared_ptr<const GenerateView> generate_before = current_.generate;
  try {
    switch (stage) {
      case kStageModel: {
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
        break;
      }
      case kStageAnalysis: {
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
              a = rerun_hip_job(*prefill_, *current_.model, r, progress);
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
            PrefillJob job = prefill_job(*model_, *current_.model, r, progress);
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
        break;
      }
      case kStageHipRest: {
        // Gives way between layers to a newly picked layer's or head's views (it starts over from
        // the viewed layer when it runs again).
        if (!prefill_ || !hip_pending_job(*prefill_)) break;
        finish_hip_rest([&](double f, const std::string& what) {
          if (earlier_stage_wanted(stage)) throw GiveWay();
          return progress(f, what);
        });
        break;
      }
      case kStageDecode: {
        // A capture or a synthetic run has no model behind it: its analysis is already whole.
        if (r.model.capture_view || r.model.synthetic_tokens > 0) break;
        if (!prefill_) throw std::logic_error("the decode steps have no prefill to run from");
        // The greedy steps (seconds at length) give way between steps to a newly picked layer's or
        // head's views and run again after them (each run starts over from the prompt's end).
        std::shared_ptr<const AnalysisView> a = decode_job(*prefill_, *prompt_view_, r, [&](double f, const std::string& what) {
          if (earlier_stage_wanted(stage)) throw GiveWay();
          return progress(f, what);
        });
        std::lock_guard<std::mutex> lock(mutex_);
        current_.analysis = a;
        auto history = std::make_shared<std::vector<LatencySample>>(
            current_.latency_history ? *current_.latency_history : std::vector<LatencySample>{});
        history->push_back(latency_sample(*a->analysis));
        history->back().new_prefill = !prefill_decoded_;
        prefill_decoded_ = true;
        current_.latency_history = std::move(history);
        break;
      }
      case kStageMasks: {
        const Request rc = clamp_selection(*current_.analysis, r);
        const PairedAnalysis& shown = *current_.analysis->analysis;
        if (prefill_ && shown.hip_partial() && rc.layer > shown.hip_through_layer && shown.options.keeps(rc.layer) &&
            hip_pending_job(*prefill_))
          finish_hip_rest(progress);  // a layer above where the HiP side stopped: the rest of it now
        if (prefill_ && !current_.analysis->has_inputs(rc.layer)) {
          // A long prompt keeps the viewed layer's inputs only: another layer needs a prefill that
          // keeps it (the analysis stage runs again for the request's layer, then the views).
          std::lock_guard<std::mutex> lock(mutex_);
          done_key_[kStageAnalysis].clear();
          throw GiveWay();
        }
        // A layer whose views the prefill deferred and the background has not reached yet: now.
        if (views_deferred(rc.layer)) add_deferred_views(rc.layer);
        auto m = compute_layer_masks(current_.analysis, rc);
        std::lock_guard<std::mutex> lock(mutex_);
        current_.masks = m;
        break;
      }
      case kStageTrace: {
        const Request rc = clamp_selection(*current_.analysis, r);
        const LayerMaskSnapshot& m = *current_.masks;
        const LayerInputs* in = m.source->analysis->find_inputs(m.layer);
        std::optional<DeviceTrace> dev;
        if (in) dev = device_trace_job(*in, m.params, rc.head, rc.query_block);
        auto t = dev ? compute_trace(m, rc, std::move(dev->trace), std::move(dev->oracle_scores), "CUDA kernels")
                     : compute_trace(m, rc);
        std::lock_guard<std::mutex> lock(mutex_);
        current_.trace = t;
        break;
      }
      case kStageDense: {
        const Request rc = clamp_selection(*current_.analysis, r);
        const LayerInputs* in = current_.analysis->analysis->find_inputs(rc.layer);
        std::optional<PooledProbabilities> pooled;
        if (in) pooled = device_dense_job(*in, rc.head, kDenseImageSide);
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
        break;
      }
      case kStageLocality: {
        const Request rc = clamp_selection(*current_.analysis, r);
        const LayerInputs* in = current_.analysis->analysis->find_inputs(rc.layer);
        std::optional<hip::ScoreLocality> on_device;
        if (in) on_device = device_locality_job(*in, rc.head, locality_queries(in->tokens), locality_params(rc, in->tokens));
        auto l = on_device ? compute_locality(rc, *on_device) : compute_locality(*current_.analysis, rc);
        std::lock_guard<std::mutex> lock(mutex_);
        current_.locality = l;
        break;
      }
      case kStageLatency: {
        auto v = std::make_shared<LatencyView>();
        const Request rc = clamp_selection(*current_.analysis, r);
        v->layer = rc.layer;
        v->requested_tokens = r.latency_tokens;
        if (model_ && !r.model.capture_view && r.model.synthetic_tokens == 0)
          v->timing = latency_job(*model_, current_.analysis->analysis->find_inputs(rc.layer),
                                  current_.analysis->analysis->options.hip.hip, r.latency_tokens, [&] {
                                    if (earlier_stage_wanted(stage)) throw GiveWay();  // a new head's views first
                                    return keep_going(stage, key[stage]);
                                  });
        std::lock_guard<std::mutex> lock(mutex_);
        current_.latency = v;
        break;
      }
      case kStageViews: {
        // The deferred layers one at a time, each published as it lands; it gives way to a newly
        // picked layer's or head's views between layers (the finished ones stay) and stops on a cancel.
        // First the viewed layer's host copy (the hover values read it; every view of it is computed
        // on the device), then the deferred layers.
        if (const LayerInputs* in = current_.analysis->analysis->find_inputs(clamp_selection(*current_.analysis, r).layer))
          if (!in->host_ready()) (void)in->host();
        const std::vector<int64_t> pending = current_.analysis->views_pending();
        size_t done = 0;
        for (int64_t layer : pending) {
          if (!keep_going(stage, key[stage])) throw Cancelled();
          if (earlier_stage_wanted(stage)) throw GiveWay();
          if (views_deferred(layer))
            add_deferred_views(layer, [&] {  // a layer's views take a few tenths of a second at 32k
              if (!keep_going(stage, key[stage])) throw Cancelled();
              if (earlier_stage_wanted(stage)) throw GiveWay();
            });
          progress(static_cast<double>(++done) / static_cast<double>(pending.size()),
                   "layer views, layer " + std::to_string(layer));
        }
        break;
      }
      case kStageOffload: {
        // The replay takes seconds at length and reads no layer: it gives way to the views of a newly
        // picked layer or head (it runs again after them), and stops on a cancel.
        auto o = compute_offload(*current_.analysis, r, [&] {
          if (!keep_going(stage, key[stage])) throw Cancelled();
          if (earlier_stage_wanted(stage)) throw GiveWay();
        });
        std::lock_guard<std::mutex> lock(mutex_);
        current_.offload = o;
        break;
      }
      case kStageGenerate: {
        generate_job(*model_, *current_.model, r, [&](const GenerateView& g) {
          {
            std::lock_guard<std::mutex> lock(mutex_);
            current_.generate = std::make_shared<const GenerateView>(g);
            current_.fraction = static_cast<double>(g.dense_tokens + g.hip_tokens) / (2.0 * r.generate_tokens);
            publish_locked();
          }
          return keep_going(stage, key[stage]);
        });
        break;
      }
      default: break;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    done_key_[stage] = key[stage];
    done_without_hip_[stage] = (stage == kStageDense || stage == kStageLocality) && !layer_inputs_follow_hip(r);
    failed_key_[stage].clear();
    current_.stage_seconds[stage] = std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_start).count();
    if (trace) std::fprintf(stderr, "worker: %s done in %.3f s\n", stage_name(stage), current_.stage_seconds[stage]);
    // The views read this stage's result, not just its inputs: a new result makes theirs stale even
    // when their keys come back (parameters A, then B with the masks cancelled, then A again: the
    // masks of A's first analysis must not pass for the masks of its new one).
    // Except a view of a layer the HiP settings do not reach (done_without_hip_): it read only what
    // every analysis of the prompt gives alike.
    for (int later = stage + 1; later < kStageCount; ++later)
      if (reads(later, stage) && !(stage == kStageAnalysis && done_without_hip_[later])) done_key_[later].clear();
    current_.error[stage].clear();
    publish_locked();
  } catch (const GiveWay&) {
    std::lock_guard<std::mutex> lock(mutex_);
    publish_locked();  // not done, not failed: the next step runs the wanted stage, then this one again
  } catch (const Cancelled&) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stage_key(stage, request_) == key[stage]) {  // the user pressed cancel: stale until the next change
      failed_key_[stage] = key[stage];
      current_.error[stage] = "cancelled";
    }
    if (stage == kStageGenerate) current_.generate = generate_before;
    publish_locked();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_key_[stage] = key[stage];
    current_.error[stage] = in_gui_words(e.what());
    if (stage == kStageGenerate) current_.generate = generate_before;
    std::fprintf(stderr, "hipstudio gui: %s failed: %s\n", stage_name(stage), e.what());
    publish_locked();
  }
  return true;
}

}  // namespace hipstudio::gui
