// The GUI's adapter to the engine: the one GUI file that includes LibTorch headers.
#include "app/gui/engine_jobs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <c10/core/ScalarType.h>

#include "app/common/model_options.h"
#include "app/gui/gui_messages.h"
#include "engine/formats/errors.h"
#include "engine/backends/attention_timing.h"
#include "engine/runtime/device.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/analysis/sweep.h"
#include "engine/analysis/hip_layer_means.h"
#include "engine/analysis/method_comparison.h"
#include "engine/analysis/method_layer_mask.h"
#include "app/common/sweep_outputs.h"

namespace hipstudio::gui {

struct LoadedModel {
  std::shared_ptr<const Model> model;
};

bool cuda_is_available() { return cuda_available(); }

std::shared_ptr<const LoadedModel> load_model_job(const ModelRequest& request, ModelInfo& info) {
  // A path that names nothing is said in the GUI's words (the loader's advice is the command line's).
  std::error_code ec;
  if (!request.path.empty() && !std::filesystem::exists(request.path, ec)) throw InputError(model_not_found_message(request.path));
  app::ModelOptions options;  // same resolution and thread policy as the command line
  options.model = request.path;
  options.device = request.device;
  options.dtype = request.dtype;
  auto loaded = std::make_shared<LoadedModel>();
  loaded->model = options.load();
  const Model& m = *loaded->model;
  info = {};
  info.display_name = m.source.display_name;
  info.architecture = m.config.architecture;
  info.device = device_description(m.run);
  info.on_cuda = m.run.device.is_cuda();
  info.cuda_available = cuda_available();
  info.n_layers = m.config.n_layers;
  info.full_attention_layers = m.config.full_attention_layers();
  info.n_heads = m.config.n_heads;
  info.n_kv_heads = m.config.n_kv_heads;
  info.head_dim = m.config.head_dim;
  info.max_seq_len = m.config.max_seq_len;
  info.vocab = m.config.vocab_size;
  info.element_bytes = static_cast<int64_t>(c10::elementSize(m.run.dtype));
  return loaded;
}

struct PrefillHandle {
  std::shared_ptr<const Model> model;  // its tokenizer names the decoded tokens
  std::unique_ptr<PairedPrefill> prefill;
};

namespace {

AnalysisOptions analysis_options(const ModelInfo& info, const Request& r) {
  AnalysisOptions options;
  options.hip = r.hip;
  options.decode_steps = r.decode_steps;
  options.random_seed = r.seed;
  // The viewed layer's views come with the prefill; the worker computes the others' after it.
  options.views_only_layer = std::clamp<int64_t>(r.layer, 0, std::max<int64_t>(0, info.n_layers - 1));
  options.keep_viewed_if_short = true;  // 128k tokens: the viewed layer's Q/K/V, not all 32 layers'
  options.viewed_layer_first = true;    // the HiP layers above it follow (the HiP layers stage)
  return options;
}

std::shared_ptr<const AnalysisView> prompt_view(const PrefillHandle& handle, const ModelInfo& info, const Request& r,
                                                double seconds) {
  auto view = std::make_shared<AnalysisView>();
  view->analysis = view->prompt_run = handle.prefill->prompt_result();
  view->prefill_run = std::make_shared<const int>(0);
  view->prefill_seconds = seconds;
  view->model = info;
  view->prompt = r.prompt;
  const Tokenizer& tok = *handle.model->tokenizer;
  for (int32_t id : view->analysis->prompt_ids) view->prompt_tokens.push_back(tok.token_text(id));
  return view;
}

// The engine refused a run's input: when the prompt's length is why, the GUI's message (with the
// controls that fix it) replaces the engine's, whose advice names command-line flags. Tokenises
// only on this failure path, so a run that fits pays nothing for the check.
[[noreturn]] void refuse_in_gui_words(const LoadedModel& model, const ModelInfo& info, const std::string& prompt,
                                      int64_t after_prompt, bool generating) {
  const int64_t n = static_cast<int64_t>(model.model->tokenizer->encode(prompt, true).size());
  const int64_t context = info.max_seq_len;
  if (!generating && n < 2) throw InputError(single_token_message());
  if (context > 0 && n + after_prompt > context)
    throw InputError(generating ? generate_too_long_message(n, after_prompt, context)
                                : prompt_too_long_message(n, context, after_prompt, info.display_name));
  throw;  // another refusal: the engine's own message (the worker rewrites its flags)
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PrefillJob prefill_job(const LoadedModel& model, const ModelInfo& info, const Request& r, const JobProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  PrefillJob job;
  job.prefill = std::make_shared<PrefillHandle>();
  job.prefill->model = model.model;
  if (r.prompt.empty()) throw InputError(empty_prompt_message());
  try {
    job.prefill->prefill = PairedPrefill::run(model.model, r.prompt, analysis_options(info, r), decode_room(r),
                                              [&](double f, const std::string& what) { return progress(f, what); });
  } catch (const InputError&) {
    refuse_in_gui_words(model, info, r.prompt, r.decode_steps, false);
  }
  job.view = prompt_view(*job.prefill, info, r, seconds_since(start));
  return job;
}

std::shared_ptr<const AnalysisView> rerun_hip_job(PrefillHandle& prefill, const ModelInfo& info, const Request& r,
                                                  const JobProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  prefill.prefill->rerun_hip(analysis_options(info, r), [&](double f, const std::string& what) { return progress(f, what); });
  return prompt_view(prefill, info, r, seconds_since(start));
}

bool hip_pending_job(const PrefillHandle& prefill) { return prefill.prefill->hip_pending(); }

std::shared_ptr<const AnalysisView> finish_hip_job(PrefillHandle& prefill, const AnalysisView& partial,
                                                   const JobProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  prefill.prefill->finish_hip([&](double f, const std::string& what) { return progress(f, what); });
  auto view = std::make_shared<AnalysisView>(partial);  // model, prompt tokens, the views computed meanwhile
  view->analysis = view->prompt_run = prefill.prefill->prompt_result();
  view->prefill_seconds = partial.prefill_seconds + seconds_since(start);
  return view;
}

std::shared_ptr<const AnalysisView> decode_job(PrefillHandle& prefill, const AnalysisView& prompt_view, const Request& r,
                                               const JobProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto view = std::make_shared<AnalysisView>(prompt_view);
  view->analysis = std::make_shared<PairedAnalysis>(prefill.prefill->decode(
      r.decode_steps, r.hip.refresh_every, [&](double f, const std::string& what) { return progress(f, what); }));
  view->decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  view->decode_dense_text.clear();
  view->decode_hip_text.clear();
  const Tokenizer& tok = *prefill.model->tokenizer;
  for (const auto& d : view->analysis->decode) {
    view->decode_dense_text.push_back(tok.token_text(d.dense_token));
    view->decode_hip_text.push_back(tok.token_text(d.hip_token));
  }
  return view;
}

DeferredLayerViews deferred_views_job(PrefillHandle& prefill, int64_t layer, const std::function<void()>& checkpoint) {
  LayerViewsResult r = prefill.prefill->layer_views(layer, checkpoint);
  return {std::move(r.quality), std::move(r.masks)};
}

std::optional<DeviceTrace> device_trace_job(const LayerInputs& inputs, const hip::HipParams& p, int64_t head,
                                            int64_t query_block) {
  return trace_on_device(inputs, p, head, query_block);
}

std::optional<PooledProbabilities> device_dense_job(const LayerInputs& inputs, const ViewsMath& math, int64_t head,
                                                    int max_side) {
  return dense_image_on_device(inputs, math, head, max_side);
}

std::optional<AttentionTiming> latency_job(const LoadedModel& model, const LayerInputs* inputs, const hip::HipParams& p,
                                           int64_t tokens, const std::function<bool()>& keep_going) {
  TimingOptions options;
  options.keep_going = keep_going;
  return guard_out_of_memory(model.model->run, "the attention timing", [&]() -> std::optional<AttentionTiming> {
    if (tokens > 0) return time_attention_at_length(*model.model, tokens, p, options);
    if (!inputs) return std::nullopt;
    return time_layer_attention(*inputs, p, options);
  });
}

std::optional<hip::ScoreLocality> device_locality_job(const LayerInputs& inputs, int64_t head,
                                                      const std::vector<int64_t>& queries, const hip::LocalityParams& lp) {
  return score_locality_on_device(inputs, head, queries, lp);
}

std::shared_ptr<const SweepView> sweep_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                                           const JobProgress& progress) {
  if (r.prompt.empty()) throw InputError(empty_prompt_message());
  auto view = std::make_shared<SweepView>();
  view->id = r.sweep_id;
  view->base = analysis_options(info, r);
  SweepSpec spec{r.sweep_field, r.sweep_values};
  spec.views_layer = r.sweep_views_layer;
  view->result = run_sweep(model.model, r.prompt, view->base, spec,
                           [&](double f, const std::string& what) { return progress(f, what); });
  view->context = app::sweep_context(info.display_name, info.device, view->base, view->result);
  return view;
}

namespace {
// A layer's mean over its heads of one field; NaN where the method does not run (dense, windowed).
double layer_mean(const LayerQuality& l, double HeadQuality::*field) {
  if (l.dense || l.heads.empty()) return NAN;
  double sum = 0;
  for (const HeadQuality& h : l.heads) sum += h.*field;
  return sum / static_cast<double>(l.heads.size());
}
}  // namespace

std::shared_ptr<const MethodsView> methods_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                                               const JobProgress& progress) {
  if (r.prompt.empty()) throw InputError(empty_prompt_message());
  if (r.methods.empty()) throw InputError("check at least one method to compare");
  // Per-head numbers only, as a sweep (no layer's inputs or masks kept, every layer's views at once).
  AnalysisOptions base = analysis_options(info, r);
  base.keep_all_layers = false;
  base.keep_layers.clear();
  base.views_only_layer = -1;
  base.keep_viewed_if_short = false;
  base.viewed_layer_first = false;
  std::vector<MethodRun> runs;
  try {
    runs = run_method_comparison(model.model, r.prompt, base, r.methods,
                                 [&](double f, const std::string& what) { return progress(f, what); });
  } catch (const hip::HipParamError& e) {
    throw InputError(e.what());
  }
  auto view = std::make_shared<MethodsView>();
  view->id = r.methods_id;
  view->timed = model.model->run.device.is_cuda();
  const PairedAnalysis& first = runs.front().analysis;
  view->dense_ppl = first.dense.ppl;
  view->dense_prefill_ms = first.dense.latency.prefill.total();
  view->prompt_tokens = static_cast<int64_t>(first.prompt_ids.size());
  for (const MethodRun& run : runs) {
    const PairedAnalysis& a = run.analysis;
    MethodRow row;
    row.name = run.method.name;
    row.title = hip::methods::find_selection_method(run.method.name).title;
    row.values = run.method.values;
    row.ppl = a.hip.ppl, row.kl = a.kl, row.top1 = a.top1_agreement;
    row.recall = mean_over_hip_layers(a, &HeadQuality::recall);
    row.mass = mean_over_hip_layers(a, &HeadQuality::mass);
    row.out_rel_err = mean_over_hip_layers(a, &HeadQuality::out_rel_err);
    row.prefill_ms = a.hip.latency.prefill.total();
    row.mask_refreshes = a.mask_refreshes;
    for (const LayerQuality& l : a.layers) {
      row.layer_recall.push_back(layer_mean(l, &HeadQuality::recall));
      row.layer_mass.push_back(layer_mean(l, &HeadQuality::mass));
      row.layer_out_rel_err.push_back(layer_mean(l, &HeadQuality::out_rel_err));
      row.layer_dense.push_back(l.dense);
    }
    view->rows.push_back(std::move(row));
  }
  return view;
}

MethodLayerMask method_mask_job(const LayerInputs& inputs, const hip::methods::MethodChoice& method, const hip::HipParams& p,
                                const hip::MaskResult* oracle) {
  return method_layer_mask(inputs, method, p, oracle);
}

void generate_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                  const std::function<bool(const GenerateView&)>& update) {
  if (r.prompt.empty()) throw InputError(empty_prompt_message());
  GenerateView view;
  view.id = r.generate_id;
  view.running = true;
  view.device = info.device;
  GenerationOptions options;
  options.max_new_tokens = r.generate_tokens;
  options.stop_at_eos = true;
  // One publish-and-ask per prefill chunk and decode step: the text streamed since the last one goes
  // on screen, and a cancel stops the run there (mid-prefill too, not only between tokens).
  options.keep_going = [&] { return update(view); };
  auto run_side = [&](AttentionBackend& backend, std::string& text, int64_t& tokens, double& tok_s) {
    GenerationResult g = generate(model.model, r.prompt, options, backend, [&](const std::string& piece) { text += piece; });
    tokens = static_cast<int64_t>(g.generated_ids.size());
    tok_s = g.decode_seconds > 0 ? static_cast<double>(tokens) / g.decode_seconds : 0.0;
    if (!update(view)) throw Cancelled();  // the side's last text and its speed on screen
  };
  try {
    DenseAttention dense;
    {  // warm-up (allocator, caches) so the first side timed is not the one that pays for it; it asks
       // keep_going at every step like the timed sides, so a cancel stops it too
      GenerationOptions warm = options;
      warm.max_new_tokens = 2;
      generate(model.model, r.prompt, warm, dense);
    }
    run_side(dense, view.dense_text, view.dense_tokens, view.dense_tok_s);
    HipAttention hip(r.hip, info.n_layers);
    run_side(hip, view.hip_text, view.hip_tokens, view.hip_tok_s);
  } catch (const InputError&) {
    refuse_in_gui_words(model, info, r.prompt, r.generate_tokens, true);
  }
  view.running = false;
  update(view);
}

}  // namespace hipstudio::gui
