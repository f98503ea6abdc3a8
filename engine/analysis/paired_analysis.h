#pragma once
// The paired run: one prompt through the dense model and through the HiP model (same weights, same
// tokens), then greedy decoding on both sides, with every number the GUI, `hipstudio analyze` and
// the captures show. Results are plain data (no tensors) so views and exporters can read them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/hip_attention.h"
#include "engine/analysis/layer_views_backend.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/model/model.h"
#include "engine/runtime/run_cancelled.h"
#include "engine/analysis/paired_result.h"

namespace hipstudio {

// progress(fraction in [0, 1], what) is called between phases; returning false cancels (the call
// then throws RunCancelled).
using AnalysisProgress = std::function<bool(double fraction, const std::string& what)>;

// The memory shape of a paired analysis of `prompt_tokens` (prefill chunks, kept layers): what
// run_paired_analysis plans with, and what `capture` checks before it starts. Fills `extras`'
// hip and kept_layers; the shape points at `extras`.
RunMemoryShape paired_analysis_shape(const Model& model, int64_t prompt_tokens, const AnalysisOptions& options,
                                     AnalysisMemoryShape& extras);

// The whole paired run: both prefills, then options.decode_steps greedy steps (a PairedPrefill and
// one decode()).
PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress = {});

// The paired run in two halves. The prefill half (both prefills, the layer views, the prompt's
// per-token metrics) keeps both sides' KV caches, so that what only changes decoding (r_m, the
// number of decode steps) re-runs the steps from the end of the prompt instead of both prefills:
// the GUI's r_m and decode sliders. The held caches are the run's KV memory, as during a run.
class PairedPrefill {
 public:
  // Both prefills of `prompt`; the KV caches leave room for `decode_room` steps (raised to
  // options.decode_steps, lowered to what the context allows past the prompt). progress reports
  // fractions in [0, 1] of the prefill half; a cancel throws RunCancelled.
  static std::unique_ptr<PairedPrefill> run(std::shared_ptr<const Model> model, const std::string& prompt,
                                            const AnalysisOptions& options, int64_t decode_room,
                                            const AnalysisProgress& progress = {});
  ~PairedPrefill();
  PairedPrefill(const PairedPrefill&) = delete;
  PairedPrefill& operator=(const PairedPrefill&) = delete;

  // The prompt's results: everything but the decode steps (decode, generated and the access
  // streams' steps are empty). Null after finish().
  std::shared_ptr<const PairedAnalysis> prompt_result() const;
  int64_t decode_room() const;
  // The HiP prefill again with other HiP settings (parameters, l_d, seed, kept and viewed layers),
  // against the same dense prefill, whose cache and last rows stay: what run() with these options
  // gives, without the dense side's time. The prompt, decode room and context stay. On a throw
  // (cancel, out of memory) the prefill can decode no more (logic_error): run a new one.
  // Only the layers the change reaches run again: from the lower of the old and the new l_d on (the
  // layers below are dense on both sides, and their kept inputs carry over), where the stream
  // entering that layer was kept (every run keeps those entering layers 1 .. l_d), else every layer.
  void rerun_hip(const AnalysisOptions& options, const AnalysisProgress& progress = {});
  // The first layer the last HiP prefill ran (0 for a whole one).
  int64_t hip_first_layer() const;
  // With AnalysisOptions::viewed_layer_first, run() stops both sides after the viewed layer, and
  // rerun_hip() the HiP side (prompt_result()->hip_through_layer says where): the viewed layer's
  // views need its own prefill only. The layers above on both sides (the dense ones a rerun_hip left
  // too) and the prompt's metrics wait for finish_hip(), which replaces prompt_result() with the
  // whole results, equal to an unsplit run's. A throw (cancel, out of memory) leaves the partial
  // results, and finish_hip can be called again. Decoding needs it done. A rerun_hip of every layer
  // runs the dense layers left first.
  bool hip_pending() const;
  void finish_hip(const AnalysisProgress& progress = {});
  // The layers whose views the prefill deferred (AnalysisOptions::views_only_layer), ascending.
  std::vector<int64_t> pending_views() const;
  // One deferred layer's views (quality and masks) from its kept inputs and the HiP mask the
  // prefill's kernels chose: what the prefill would have computed. The prompt's results stay as
  // they are (the caller keeps what it computed); the layer must be one of pending_views().
  // `checkpoint` runs between the layer's KV groups and may throw to stop it (nothing changes then).
  LayerViewsResult layer_views(int64_t layer, const std::function<void()>& checkpoint = {});
  // Greedy decoding on both sides from the end of the prompt: `decode_steps` (0..decode_room())
  // steps with HiP masks refreshed every `refresh_every` steps. Returns the prompt's results plus the
  // steps, what run_paired_analysis gives for these settings; callable again with other settings.
  // progress reports fractions in [0, 1] of the decode half.
  PairedAnalysis decode(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress = {});
  // The last decode: as decode(), but the prompt's results (all kept layers' Q/K/V and masks) move
  // into the returned analysis instead of being copied, when no one else holds prompt_result().
  // The prefill can decode no more afterwards (logic_error).
  PairedAnalysis finish(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress = {});

 private:
  struct State;
  explicit PairedPrefill(std::unique_ptr<State> state);
  PairedAnalysis decode_steps_run(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress,
                                  bool consume);
  std::unique_ptr<State> state_;
};

}  // namespace hipstudio
