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

bool Worker::runnable(const StageDef& d, const Request& r, const std::array<std::string, kStageCount>& key) const {
  auto up_to_date = [&](int st) { return done_key_[st] == key[st]; };
  const int s = d.stage;
  if (up_to_date(s) || failed_key_[s] == key[s]) return false;
  if (d.skipped && d.skipped(r)) return false;
  for (int e = 0; e < kStageCount; ++e)
    if (((d.reads | d.after) >> e & 1) && !up_to_date(e)) return false;  // its inputs are not there (yet, or they failed)
  return true;
}

bool Worker::earlier_stage_wanted(int stage) const {
  // Only a stage the scheduler would run next counts: one waiting on a failed input never runs, and
  // giving way to it would spin.
  std::lock_guard<std::mutex> lock(mutex_);
  std::array<std::string, kStageCount> key;
  for (int s = 0; s < kStageCount; ++s) key[s] = stage_key(s, request_);
  for (const StageDef& d : stages()) {
    if (d.stage == stage) return false;
    if (runnable(d, request_, key)) return true;
  }
  return false;
}

void Worker::checkpoint(const StageRun& run) const {
  if (!keep_going(run.stage, run.key)) throw Cancelled();
  if (earlier_stage_wanted(run.stage)) throw GiveWay();
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
  const StageDef* def = nullptr;
  for (const StageDef& d : stages())
    if (runnable(d, r, key)) {
      def = &d;
      break;
    }
  if (!def) return false;
  const int stage = def->stage;
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
  StageRun run{stage, key[stage], {}};
  run.progress = [&](double f, const std::string& what) {
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
  run.progress(0.0, std::string(stage_name(stage)) + "...");
  const auto stage_start = std::chrono::steady_clock::now();
  // Generation publishes its growing text; a cancelled or failed one puts the last complete result
  // back, so no half-written text is left on screen as if it were a result.
  const std::shared_ptr<const GenerateView> generate_before = current_.generate;
  try {
    (this->*def->run)(r, run);
    std::lock_guard<std::mutex> lock(mutex_);
    done_key_[stage] = key[stage];
    done_without_hip_[stage] = def->dense_inputs_only && !layer_inputs_follow_hip(r);
    failed_key_[stage].clear();
    current_.stage_seconds[stage] = std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_start).count();
    if (trace) std::fprintf(stderr, "worker: %s done in %.3f s\n", stage_name(stage), current_.stage_seconds[stage]);
    // The views read this stage's result, not just its inputs: a new result makes theirs stale even
    // when their keys come back (parameters A, then B with the masks cancelled, then A again: the
    // masks of A's first analysis must not pass for the masks of its new one).
    // Except a view of a layer the HiP settings do not reach (done_without_hip_): it read only what
    // every analysis of the prompt gives alike.
    for (const StageDef& later : stages())
      if ((later.reads >> stage & 1) && !(stage == kStageAnalysis && done_without_hip_[later.stage])) done_key_[later.stage].clear();
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
    if (def->restores_on_abort) current_.generate = generate_before;
    publish_locked();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_key_[stage] = key[stage];
    current_.error[stage] = in_gui_words(e.what());
    if (def->restores_on_abort) current_.generate = generate_before;
    std::fprintf(stderr, "hipstudio gui: %s failed: %s\n", stage_name(stage), e.what());
    publish_locked();
  }
  return true;
}

}  // namespace hipstudio::gui
