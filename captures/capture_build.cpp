// build_capture: the views of a capture, from the views layer's results in the analysis and, for
// traces and locality, from the kept layers' prompt Q/K/V by the views layer's rules
// (engine/views/trace_view.h, locality_view.h), the GUI's.
#include <algorithm>
#include <ctime>
#include <stdexcept>
#include <utility>
#include <vector>

#include "captures/capture.h"
#include "captures/figures.h"
#include "engine/analysis/layer_view.h"
#include "engine/formats/errors.h"
#include "engine/views/locality_view.h"
#include "engine/views/reference_views.h"
#include "engine/views/trace_view.h"
#include "engine/runtime/phase_clock.h"
#include "kernels/parallel_for.h"

namespace hipstudio::captures {

bool Capture::has_view(const std::string& view) const {
  return std::find(info.views.begin(), info.views.end(), view) != info.views.end();
}

int64_t Capture::view_index(int64_t layer) const {
  const auto it = std::find(view_layers.begin(), view_layers.end(), layer);
  return it == view_layers.end() ? -1 : static_cast<int64_t>(it - view_layers.begin());
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void set_token_pieces(CaptureInfo& info, const PairedAnalysis& a, const std::function<std::string(int32_t)>& text) {
  info.prompt_pieces.clear();
  info.decode_dense_pieces.clear();
  info.decode_hip_pieces.clear();
  for (int32_t id : a.prompt_ids) info.prompt_pieces.push_back(text(id));
  for (const DecodeStepRecord& d : a.decode) {
    info.decode_dense_pieces.push_back(text(d.dense_token));
    info.decode_hip_pieces.push_back(text(d.hip_token));
  }
}

namespace {

// The masks of `layers` for the side of `a`: the views layer's (computed during the run) or, where
// the analysis holds inputs but no masks of a layer, the views layer's CPU reference on them.
std::vector<LayerMaskViews> side_masks(const PairedAnalysis& a, const std::vector<int64_t>& layers, int threads) {
  std::vector<LayerMaskViews> out;
  for (int64_t l : layers) {
    if (const LayerMaskViews* m = a.find_masks(l)) {
      out.push_back(*m);
    } else if (const LayerInputs* kept = a.find_inputs(l)) {
      const hip::AttentionInputs in = layer_view(*kept);
      const ViewsMath math = l < static_cast<int64_t>(a.layers.size()) ? a.layers[static_cast<size_t>(l)].math : ViewsMath{};
      out.push_back(reference_layer_masks(in, a.options.hip.hip, math, a.options.random_seed, l, threads,
                                          /*with_oracle=*/true, a.options.hip.method));
    } else {
      throw InputError("the " + a.options.hip.method.name + " run kept neither masks nor inputs of layer " + std::to_string(l));
    }
  }
  return out;
}

}  // namespace

Capture build_capture(PairedAnalysis analysis, CaptureInfo info, const CaptureRequest& request,
                      const offload::OffloadConfig* offload_config) {
  std::vector<MethodRun> runs;
  runs.push_back({analysis.options.hip.method, std::move(analysis)});
  return build_capture(std::move(runs), std::move(info), request, offload_config);
}

Capture build_capture(std::vector<MethodRun> runs, CaptureInfo info, const CaptureRequest& request,
                      const offload::OffloadConfig* offload_config) {
  if (runs.empty()) throw std::invalid_argument("build_capture: a capture holds at least one method");
  for (const std::string& v : request.views) {
    const auto& names = capture_view_names();
    if (std::find(names.begin(), names.end(), v) == names.end())
      throw InputError("unknown view '" + v + "'; views are mask, iterations, locality, cache, latency");
  }
  Capture c;
  info.views = request.views;
  if (info.created.empty()) info.created = utc_now_iso8601();
  c.info = std::move(info);
  c.analysis = std::move(runs.front().analysis);
  PairedAnalysis& a = c.analysis;
  const hip::HipParams& p = a.options.hip.hip;
  const int64_t n_layers = static_cast<int64_t>(a.layers.size());
  const int64_t tokens = static_cast<int64_t>(a.prompt_ids.size());
  // The view layers: those the analysis kept masks or inputs of.
  for (const LayerMaskViews& m : a.masks) c.view_layers.push_back(m.layer);
  if (a.masks.empty())
    for (const LayerInputs& in : a.inputs) c.view_layers.push_back(in.layer);

  PhaseClock clock;  // HIPSTUDIO_PROFILE=1: where building the views goes
  clock.begin();
  a.options.hip.method = runs.front().method;  // the run's method is what its side selected with
  if (c.has_view("mask")) c.masks = side_masks(a, c.view_layers, request.threads);
  c.methods.push_back(captured_method(runs.front().method, a, c.masks));
  for (size_t i = 1; i < runs.size(); ++i) {
    // Each further method: its side and masks; its inputs and the rest of its run are not kept.
    const PairedAnalysis& r = runs[i].analysis;
    for (const CapturedMethod& held : c.methods)
      if (held.choice.name == runs[i].method.name) throw InputError("method '" + held.choice.name + "' is captured twice");
    c.methods.push_back(captured_method(runs[i].method, r, c.has_view("mask") ? side_masks(r, c.view_layers, request.threads)
                                                                               : std::vector<LayerMaskViews>{}));
    runs[i].analysis = PairedAnalysis{};
  }
  clock.lap("masks");

  if (c.has_view("iterations") && !a.inputs.empty()) {
    std::vector<TraceSpec> specs = request.traces;
    if (specs.empty()) {
      const int64_t last_qb = (tokens + p.b_q - 1) / p.b_q - 1;
      for (const LayerInputs& in : a.inputs)
        if (in.layer >= a.options.hip.dense_layers) specs.push_back({in.layer, 0, last_qb});
      if (specs.empty()) specs.push_back({a.inputs.back().layer, 0, last_qb});
    }
    std::vector<hip::AttentionInputs> trace_inputs;
    for (const TraceSpec& s : specs) {
      if (s.layer < 0 || s.layer >= n_layers)
        throw InputError("trace layer " + std::to_string(s.layer) + " is outside the model's " + std::to_string(n_layers) + " layers");
      const LayerInputs* kept = a.find_inputs(s.layer);
      if (!kept)
        throw InputError("trace layer " + std::to_string(s.layer) + " has no stored Q/K/V: add it to --inputs-layers");
      const hip::AttentionInputs in = layer_view(*kept);
      const int64_t blocks = (tokens + p.b_q - 1) / p.b_q;
      if (s.head < 0 || s.head >= in.hq || s.query_block < 0 || s.query_block >= blocks)
        throw InputError("trace head " + std::to_string(s.head) + ", query block " + std::to_string(s.query_block) +
                         " is outside the prompt (" + std::to_string(in.hq) + " heads, " + std::to_string(blocks) + " query blocks)");
      trace_inputs.push_back(in);
    }
    // Each trace's float64 search on a thread of its own (each writes its own slot).
    c.traces.resize(specs.size());
    hip::parallel_for(static_cast<int64_t>(specs.size()), request.threads, [&](int64_t i, int) {
      const TraceSpec& s = specs[static_cast<size_t>(i)];
      BlockTraceView view = reference_trace_view(trace_inputs[static_cast<size_t>(i)], p, s.layer, s.head, s.query_block);
      c.traces[static_cast<size_t>(i)] = {s.layer, std::move(view.trace), std::move(view.oracle_scores)};
    });
  }
  clock.lap("traces");

  // Locality needs every view layer's inputs (locality[i] belongs to view_layers[i]).
  const bool all_inputs = std::all_of(c.view_layers.begin(), c.view_layers.end(), [&](int64_t l) { return a.find_inputs(l); });
  if (c.has_view("locality") && tokens > 1 && !c.view_layers.empty() && all_inputs) {
    const hip::LocalitySample sample = locality_view_sample(tokens, request.locality_bins, request.locality_shown_deltas);
    c.locality_params = sample.params;
    c.locality_queries = sample.rows;
    if (!c.locality_params.deltas.empty()) {
      // One float64 reference per (view layer, head), spread over the request's threads: each item
      // writes its own slot, so the result does not depend on them.
      std::vector<hip::AttentionInputs> inputs;
      for (int64_t l : c.view_layers) inputs.push_back(layer_view(*a.find_inputs(l)));
      std::vector<std::pair<size_t, int64_t>> items;  // (view layer index, head)
      for (size_t i = 0; i < inputs.size(); ++i) {
        c.locality.emplace_back(static_cast<size_t>(inputs[i].hq));
        for (int64_t h = 0; h < inputs[i].hq; ++h) items.emplace_back(i, h);
      }
      hip::parallel_for(static_cast<int64_t>(items.size()), request.threads, [&](int64_t item, int) {
        const auto [i, h] = items[static_cast<size_t>(item)];
        c.locality[i][static_cast<size_t>(h)] = hip::score_locality(inputs[i], p, h, c.locality_queries, c.locality_params);
      });
    }
  }

  clock.lap("locality");
  if (c.has_view("cache")) {
    if (!offload_config) throw InputError("the cache view needs an offloading configuration");
    c.has_offload = true;
    c.offload_config = *offload_config;
    c.offload_config.build_access_map = true;
    c.offload = offload::simulate_offloading(a.access, c.offload_config);
  }
  clock.lap("offloading");
  if (request.render_images) c.images = render_capture_images(c);
  clock.lap("figures");
  if (!request.keep_inputs) c.analysis.inputs.clear();
  c.analysis.masks.clear();  // the capture's own copy (c.masks) is what it writes
  clock.print("build_capture");
  return c;
}

}  // namespace hipstudio::captures
