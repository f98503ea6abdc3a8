// build_capture: the views of a capture, computed from the analysis' prompt Q/K/V with the kernels'
// CPU reference (the same calls the GUI's on-demand views make).
#include <algorithm>
#include <ctime>

#include "captures/capture.h"
#include "captures/figures.h"
#include "engine/analysis/layer_view.h"
#include "engine/formats/errors.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"

namespace hipstudio::captures {

bool Capture::has_view(const std::string& view) const {
  return std::find(info.views.begin(), info.views.end(), view) != info.views.end();
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Capture build_capture(PairedAnalysis analysis, CaptureInfo info, const CaptureRequest& request,
                      const offload::OffloadConfig* offload_config) {
  for (const std::string& v : request.views) {
    const auto& names = capture_view_names();
    if (std::find(names.begin(), names.end(), v) == names.end())
      throw InputError("unknown view '" + v + "'; views are mask, iterations, locality, cache, latency");
  }
  Capture c;
  info.views = request.views;
  if (info.created.empty()) info.created = utc_now_iso8601();
  c.info = std::move(info);
  c.analysis = std::move(analysis);
  const PairedAnalysis& a = c.analysis;
  const hip::HipParams& p = a.options.hip.hip;
  const int64_t n_layers = static_cast<int64_t>(a.inputs.size());
  const int64_t tokens = n_layers ? a.inputs[0].tokens : 0;

  if (c.has_view("mask")) {
    for (int64_t l = 0; l < n_layers; ++l) {
      const hip::AttentionInputs in = layer_view(a.inputs[l]);
      LayerMasks m;
      hip::MaskOptions opt;
      opt.threads = request.threads;
      m.hip = hip::estimate_masks(in, p, opt).mask;
      m.oracle = hip::oracle_masks(in, p, request.threads);
      m.random = hip::random_masks(in, p, a.options.random_seed + static_cast<uint64_t>(l));
      m.recall = hip::mask_recall(m.hip, m.oracle);
      m.random_recall = hip::mask_recall(m.random, m.oracle);
      c.masks.push_back(std::move(m));
    }
  }

  if (c.has_view("iterations") && n_layers > 0) {
    std::vector<TraceSpec> specs = request.traces;
    if (specs.empty()) {
      const int64_t last_qb = (tokens + p.b_q - 1) / p.b_q - 1;
      for (int64_t l = std::min(a.options.hip.dense_layers, n_layers - 1); l < n_layers; ++l) specs.push_back({l, 0, last_qb});
    }
    for (const TraceSpec& s : specs) {
      if (s.layer < 0 || s.layer >= n_layers)
        throw InputError("trace layer " + std::to_string(s.layer) + " is outside the model's " + std::to_string(n_layers) + " layers");
      const hip::AttentionInputs in = layer_view(a.inputs[s.layer]);
      const int64_t blocks = (tokens + p.b_q - 1) / p.b_q;
      if (s.head < 0 || s.head >= in.hq || s.query_block < 0 || s.query_block >= blocks)
        throw InputError("trace head " + std::to_string(s.head) + ", query block " + std::to_string(s.query_block) +
                         " is outside the prompt (" + std::to_string(in.hq) + " heads, " + std::to_string(blocks) + " query blocks)");
      c.traces.push_back({s.layer, hip::trace_block_mask(in, p, s.head, s.query_block)});
    }
  }

  if (c.has_view("locality") && tokens > 1) {
    for (int64_t d : request.locality_deltas)
      if (d >= 1 && d < tokens) c.locality_params.deltas.push_back(d);
    c.locality_params.bins = request.locality_bins;
    for (int64_t i = std::max<int64_t>(0, tokens - request.locality_queries); i < tokens; ++i) c.locality_queries.push_back(i);
    if (!c.locality_params.deltas.empty()) {
      for (int64_t l = 0; l < n_layers; ++l) {
        const hip::AttentionInputs in = layer_view(a.inputs[l]);
        std::vector<hip::ScoreLocality> heads;
        for (int64_t h = 0; h < in.hq; ++h) heads.push_back(hip::score_locality(in, p, h, c.locality_queries, c.locality_params));
        c.locality.push_back(std::move(heads));
      }
    }
  }

  if (c.has_view("cache")) {
    if (!offload_config) throw InputError("the cache view needs an offloading configuration");
    c.has_offload = true;
    c.offload_config = *offload_config;
    c.offload_config.build_access_map = true;
    c.offload = offload::simulate_offloading(a.access, c.offload_config);
  }

  if (request.render_images) c.images = render_capture_images(c);
  if (!request.keep_inputs) c.analysis.inputs.clear();
  return c;
}

}  // namespace hipstudio::captures
