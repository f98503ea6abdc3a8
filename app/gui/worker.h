#pragma once
// The compute thread (ImHex's double buffering): the UI submits the Request it wants every frame;
// the worker brings its stages up to date one at a time, in order, and publishes an immutable
// Snapshot after each step and on progress. A newer request or cancel() aborts the running stage
// at its next progress check; the UI never waits on the worker.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "app/gui/request.h"
#include "app/gui/results.h"

namespace hipstudio::gui {

struct LoadedModel;
struct PrefillHandle;

class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void submit(const Request& request);  // cheap when nothing changed
  // Stops the running stage at its next progress check (it shows "cancelled" and stale) and starts
  // nothing else until the next request that changes something; that request runs it again.
  void cancel();
  std::shared_ptr<const Snapshot> snapshot() const;
  // True when the worker has done (or cancelled, or failed) everything the latest request asks
  // and waits; its last published snapshot then says so (busy false). For tests and the soak.
  bool idle() const;
  // Called (on the worker thread) after each publish, e.g. to wake a UI waiting for events.
  void set_notify(std::function<void()> notify);

 private:
  void run();
  bool step(const Request& r);  // runs one stage; false: nothing left to do
  void publish_locked();
  // Progress check of a running stage: no cancel, and the request still wants this stage's key.
  bool keep_going(int stage, const std::string& key) const;
  void release_prefill();  // drops the last prefill (its KV caches) and forgets its key
  // Computes the views of a layer the last prefill deferred and puts them in the prompt's view and
  // the analysis on screen (new views of both, sharing the deferred set).
  void add_deferred_views(int64_t layer, const std::function<void()>& checkpoint = {});
  // Runs the HiP layers the last prefill left (it stopped after the viewed layer) and puts the whole
  // prompt results on screen, keeping the views computed meanwhile.
  void finish_hip_rest(const std::function<bool(double, const std::string&)>& progress);
  // The layer's views were deferred by the last prefill and are not computed yet.
  bool views_deferred(int64_t layer) const;
  // The scheduler would run stage `s` for request r (keys: r's): stale, not failed, its inputs up to
  // date, not skipped for this kind of run. Reads done_key_ / failed_key_: the worker thread, or under mutex_.
  bool runnable(int s, const Request& r, const std::array<std::string, kStageCount>& key) const;
  // A stage before `stage` in the run order is runnable for the current request.
  bool earlier_stage_wanted(int stage) const;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stop_ = false;
  bool cancel_ = false;
  Request request_;
  uint64_t generation_ = 0;
  uint64_t served_generation_ = ~uint64_t{0};  // the generation the worker last went idle on

  // Worker-owned state (results and the keys they were built from), guarded by mutex_ when read
  // for publishing.
  std::shared_ptr<const LoadedModel> model_;
  // The last prefill (its KV caches, for decode-only changes) and its prompt-only view: set by the
  // analysis stage of a model run, null for captures and synthetic runs.
  std::shared_ptr<PrefillHandle> prefill_;
  std::shared_ptr<const AnalysisView> prompt_view_;
  std::string prefill_dense_key_;  // dense_prefill_key of prefill_'s request
  bool prefill_decoded_ = false;  // a decode run already reported prefill_'s timings to the history
  Snapshot current_;
  std::array<std::string, kStageCount> done_key_;
  // Whether done_key_'s result read only inputs no HiP setting reaches (layer_inputs_follow_hip):
  // a new analysis leaves such a result valid.
  std::array<bool, kStageCount> done_without_hip_{};
  std::array<std::string, kStageCount> failed_key_;
  std::shared_ptr<const Snapshot> published_;
  std::function<void()> notify_;
};

// The request's layer / head / query block clamped to the analysis's shape (the UI clamps too, but
// a request can arrive before the UI has seen a new model's shape).
Request clamp_selection(const AnalysisView& a, Request r);

// The stage computations that need no LibTorch (worker_views.cpp), usable from the self-test.
std::shared_ptr<const LayerMaskSnapshot> compute_layer_masks(const std::shared_ptr<const AnalysisView>& a, const Request& r);
std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r);  // the reference's
// The same view from a trace and oracle scores computed elsewhere (the CUDA kernels'); `source` names it.
std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r, hip::MaskTrace trace,
                                               std::vector<double> oracle_scores, const std::string& source);
std::shared_ptr<const DenseView> compute_dense(const AnalysisView& a, const Request& r);  // the reference's
// The same view from an image pooled elsewhere (on the device); `source` names it.
std::shared_ptr<const DenseView> compute_dense(const Request& r, viz::HeatGrid probs, const std::string& source);
std::shared_ptr<const LocalityView> compute_locality(const AnalysisView& a, const Request& r);  // the reference's
// The query rows the locality view samples (64 from the prompt's second half), its Deltas (the
// picked one, then a sweep for the mean / std curve), and the view from statistics computed
// elsewhere with them (on the device: engine/analysis/device_locality.h).
std::vector<int64_t> locality_queries(int64_t tokens);
hip::LocalityParams locality_params(const Request& r, int64_t tokens);
std::shared_ptr<const LocalityView> compute_locality(const Request& r, const hip::ScoreLocality& stats);
// `checkpoint` runs between its replays (one per bank size and context, about 0.3 s each at 32k
// tokens) and may throw to stop it: the worker's stage gives way there.
std::shared_ptr<const OffloadView> compute_offload(const AnalysisView& a, const Request& r,
                                                   const std::function<void()>& checkpoint = {});
// Random Q/K/V of `tokens` tokens (2 query heads, 1 KV head, d 64) with score locality, for the
// frame-time check at prompt lengths the default model cannot hold.
std::shared_ptr<const AnalysisView> synthetic_analysis(int64_t tokens, const Request& r);

}  // namespace hipstudio::gui
