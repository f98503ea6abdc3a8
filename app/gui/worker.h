#pragma once
// The compute thread (ImHex's double buffering): the UI submits the Request it wants every frame;
// the worker brings its stages up to date one at a time, in order, and publishes an immutable
// Snapshot after each step and on progress. A newer request or cancel() aborts the running stage
// at its next progress check; the UI never waits on the worker.
//
// The stages are one table (worker_stages.cpp, Worker::stages()), in the order stale stages run:
// each entry says which stages' results it reads (a new result of those makes its own stale), which
// must merely be done first, when a kind of run skips it, what its cache key holds, and the member
// function that runs it. The scheduler (worker.cpp) knows no stage by name.
#include <condition_variable>
#include <deque>
#include <map>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

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
  // The running stage, its key and its progress callback.
  struct StageRun {
    int stage;
    std::string key;
    std::function<bool(double, const std::string&)> progress;  // publishes; false: stop at the next check
  };
  // Thrown by a stage's checkpoint when a stage before it in the run order became wanted: not done,
  // not failed; the next step runs the wanted stage, then this one again.
  struct GiveWay {};
  // One row of the stage table (worker_stages.cpp).
  struct StageDef {
    int stage;                       // its index in the Snapshot's per-stage arrays (results.h)
    const char* name;                // what the status bar and the self-test call it (stage_name)
    uint32_t reads;                  // bit s: computes from stage s's result
    uint32_t after;                  // bit s: runs only once stage s is done (reads nothing of it)
    bool (*skipped)(const Request&); // this kind of run has no such stage; nullptr: never skipped
    // Its result read only the prompt's inputs for a layer no HiP setting reaches (so a new analysis
    // leaves it valid, and its key holds no HiP setting): the dense image and the locality view.
    bool dense_inputs_only;
    bool keys_decode;                // its key holds r_m (it reads the decode half's schedule)
    bool keys_steps;                 // its key holds the decode steps
    void (*key_rest)(std::ostream&, const Request&);  // the key's stage-specific tail; nullptr: none
    void (Worker::*run)(const Request&, StageRun&);
    bool restores_on_abort;          // a cancelled or failed run puts the last complete result back
  };
  // Every stage, in run order (a stage's reads and afters come before it in this order).
  static const std::vector<StageDef>& stages();
  static const StageDef& stage_def(int stage);
  friend std::string stage_key(int stage, const Request& r);
  friend const char* stage_name(int stage);

  void run();
  bool step(const Request& r);  // runs one stage; false: nothing left to do
  void publish_locked();
  // Progress check of a running stage: no cancel, and the request still wants this stage's key.
  bool keep_going(int stage, const std::string& key) const;
  // Throws GiveWay when an earlier stage became wanted, Cancelled when this one is no longer wanted.
  void checkpoint(const StageRun& run) const;
  void release_prefill();  // drops the last prefill (its KV caches) and forgets its key
  // Computes the views of a layer the last prefill deferred and puts them in the prompt's view and
  // the analysis on screen (new views of both, sharing the deferred set).
  void add_deferred_views(int64_t layer, const std::function<void()>& checkpoint = {});
  // Runs the layers the last prefill left on both sides (it stopped after the viewed layer) and puts the whole
  // prompt results on screen, keeping the views computed meanwhile.
  void finish_hip_rest(const std::function<bool(double, const std::string&)>& progress);
  // The layer's views were deferred by the last prefill and are not computed yet.
  bool views_deferred(int64_t layer) const;
  // The scheduler would run stage `s` for request r (keys: r's): stale, not failed, its inputs up to
  // date, not skipped for this kind of run. Reads done_key_ / failed_key_: the worker thread, or under mutex_.
  bool runnable(const StageDef& s, const Request& r, const std::array<std::string, kStageCount>& key) const;
  // A stage before `stage` in the run order is runnable for the current request.
  bool earlier_stage_wanted(int stage) const;

  // The stages (worker_stages.cpp), one member each.
  void run_model(const Request& r, StageRun& run);
  void run_analysis(const Request& r, StageRun& run);
  void run_hip_rest(const Request& r, StageRun& run);
  void run_decode(const Request& r, StageRun& run);
  void run_masks(const Request& r, StageRun& run);
  void run_trace(const Request& r, StageRun& run);
  void run_dense(const Request& r, StageRun& run);
  void run_locality(const Request& r, StageRun& run);
  void run_latency(const Request& r, StageRun& run);
  void run_views(const Request& r, StageRun& run);
  void run_offload(const Request& r, StageRun& run);
  void run_generate(const Request& r, StageRun& run);
  void run_sweep(const Request& r, StageRun& run);
  void run_methods(const Request& r, StageRun& run);
  void run_method_masks(const Request& r, StageRun& run);
  // One compared method's view of the viewed layer `m` (run_method_masks), from the cache or computed.
  MethodMaskView method_mask_view(const hip::methods::MethodChoice& choice, const std::shared_ptr<const LayerMaskSnapshot>& m);

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
  // The method masks stage's cache (the worker thread's alone): each method's mask of a layer,
  // keyed by method, values, layer and params, computed once per run (the prefill
  // `method_masks_run_`, whose end empties it); at most kMethodMaskCacheSize entries, oldest out first.
  static constexpr size_t kMethodMaskCacheSize = 32;
  std::map<std::string, std::shared_ptr<const MethodLayerMask>> method_mask_cache_;
  std::deque<std::string> method_mask_order_;
  std::weak_ptr<const void> method_masks_run_;
  std::shared_ptr<const Snapshot> published_;
  std::function<void()> notify_;
};

// The request's layer / head / query block clamped to the analysis's shape (the UI clamps too, but
// a request can arrive before the UI has seen a new model's shape).
Request clamp_selection(const AnalysisView& a, Request r);

// The stage computations that need no LibTorch (worker_views.cpp), usable from the self-test.
std::shared_ptr<const LayerMaskSnapshot> compute_layer_masks(const std::shared_ptr<const AnalysisView>& a, const Request& r);
std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r);  // the reference's
// The same view from the views layer's trace of the block computed elsewhere (trace_view_of on the
// CUDA kernels' trace and scores).
std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r, BlockTraceView view);
std::shared_ptr<const DenseView> compute_dense(const AnalysisView& a, const Request& r);  // the reference's
// The same view from an image pooled elsewhere (on the device); `source` names it.
std::shared_ptr<const DenseView> compute_dense(const Request& r, viz::HeatGrid probs, const std::string& source);
std::shared_ptr<const LocalityView> compute_locality(const AnalysisView& a, const Request& r);  // the reference's
// The query rows and Deltas the locality view pools (engine/views/locality_view.h's rule with the
// viewed Delta and bins), and the view from statistics computed with them elsewhere (on the device:
// engine/analysis/device_locality.h); `source` names where.
hip::LocalitySample locality_sample(const Request& r, int64_t tokens);
std::shared_ptr<const LocalityView> compute_locality(const Request& r, const hip::ScoreLocality& stats,
                                                     const std::string& source);
// `checkpoint` runs between its replays (one per bank size and context, about 0.3 s each at 32k
// tokens) and may throw to stop it: the worker's stage gives way there.
std::shared_ptr<const OffloadView> compute_offload(const AnalysisView& a, const Request& r,
                                                   const std::function<void()>& checkpoint = {});
// Random Q/K/V of `tokens` tokens (2 query heads, 1 KV head, d 64) with score locality, for the
// frame-time check at prompt lengths the default model cannot hold.
std::shared_ptr<const AnalysisView> synthetic_analysis(int64_t tokens, const Request& r);

}  // namespace hipstudio::gui
