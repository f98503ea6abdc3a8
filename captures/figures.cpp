#include "captures/figures.h"
#include "captures/method_comparison_report.h"

#include <algorithm>

#include "captures/layer_kinds.h"
#include "captures/mask_png.h"
#include "captures/svg_plots.h"
#include "kernels/parallel_for.h"

namespace hipstudio::captures {

BlockTraceView captured_trace_view(const Capture& c, const CapturedTrace& t) {
  const hip::HipParams& p = c.analysis.options.hip.hip;
  if (!t.oracle_scores.empty()) return trace_view_of(t.layer, p, t.trace, t.oracle_scores, "capture");
  BlockTraceView v = trace_view_of(t.layer, p, t.trace, {}, "capture (oracle blocks from its masks)");
  const int64_t i = c.view_index(t.layer);
  if (i < 0 || i >= static_cast<int64_t>(c.masks.size())) return v;
  const hip::MaskResult& o = c.masks[static_cast<size_t>(i)].oracle;
  if (o.blocks.empty() || t.trace.head >= o.heads || t.trace.query_block >= o.query_blocks) return v;
  const int32_t* row = o.row(t.trace.head, t.trace.query_block);
  v.oracle_blocks.assign(row, row + o.count(t.trace.head, t.trace.query_block));
  return v;
}

std::vector<LocalityView> captured_locality_views(const Capture& c, size_t index, int64_t delta) {
  const std::vector<int64_t>& deltas = c.locality_params.deltas;
  if (std::find(deltas.begin(), deltas.end(), delta) == deltas.end() && !deltas.empty()) delta = deltas.front();
  const std::string note =
      locality_rule_note(c.locality_queries, deltas, static_cast<int64_t>(c.analysis.prompt_ids.size()));
  std::vector<LocalityView> out;
  for (const hip::ScoreLocality& h : c.locality.at(index))
    out.push_back(locality_view_of(h, c.view_layers.at(index), delta, c.locality_params.bins, "capture", note));
  return out;
}

std::string iterations_title(const CapturedTrace& t) {
  return "HiP's search, layer " + std::to_string(t.layer) + ", head " + std::to_string(t.trace.head) + ", query block " +
         std::to_string(t.trace.query_block);
}

std::string iterations_subtitle(const Capture& c, const CapturedTrace& t) {
  const hip::HipParams& p = c.analysis.options.hip.hip;
  const std::string run = figure_run(c) + "; T = " + std::to_string(c.analysis.prompt_ids.size()) + "; ";
  return run + "queries " + std::to_string(t.trace.row_begin) + "-" + std::to_string(t.trace.row_end - 1) + "; k " + std::to_string(p.k) + ", b_q " +
         std::to_string(p.b_q) + ", b_k " + std::to_string(p.b_k) + ", sink " + std::to_string(p.sink) + ", window " +
         std::to_string(p.window) + "; Kb = " + std::to_string(p.b_k > 0 ? p.k / p.b_k : 0);
}

std::string figure_run(const Capture& c) {
  std::string device = c.info.run.device.empty() ? "an unrecorded device" : c.info.run.device;
  // The device string may already end in the dtype ("cpu (4 threads), f32"): not said twice.
  if (!c.info.dtype.empty() && device.find(c.info.dtype) == std::string::npos) device += ", " + c.info.dtype;
  return (c.info.run.model.empty() ? std::string("model") : c.info.run.model) + " on " + device;
}

std::string figure_context(const Capture& c) {
  const HipModelParams& p = c.analysis.options.hip;
  return figure_run(c) + "; T = " +
         std::to_string(c.analysis.prompt_ids.size()) + " tokens; k " + std::to_string(p.hip.k) + ", b_q " + std::to_string(p.hip.b_q) +
         ", b_k " + std::to_string(p.hip.b_k) + ", sink " + std::to_string(p.hip.sink) + ", window " + std::to_string(p.hip.window) +
         ", " + layer_kinds(c.analysis).dense_layers_text();
}

std::vector<Figure> capture_figures(const Capture& c, const FigureOptions& o) {
  std::vector<Figure> out;
  const std::string context = figure_context(c);
  const PairedAnalysis& a = c.analysis;
  const hip::HipParams& p = a.options.hip.hip;
  const int64_t tokens = static_cast<int64_t>(a.prompt_ids.size());
  const viz::FigureStyle style = viz::figure_style(o.style);
  const LayerKinds kinds = layer_kinds(a);
  // The mask figures, one per view layer, rendered and encoded in parallel (each into its own slot).
  std::vector<Figure> masks(c.masks.size());
  hip::parallel_for(static_cast<int64_t>(c.masks.size()), 0, [&](int64_t item, int) {
    const size_t i = static_cast<size_t>(item);
    const int64_t l = c.view_layers[i];
    const int64_t head = std::clamp<int64_t>(o.head, 0, std::max<int64_t>(0, c.masks[i].hip.heads - 1));
    const MaskExport mask = mask_export(c.masks[i], p, tokens, head, style);
    const std::string dense = kinds.hip(l) ? "" : " (" + kinds.text(l) + "; what HiP would select)";
    const std::string lh = "L" + std::to_string(l) + "_H" + std::to_string(head);
    masks[i] = {"mask_" + lh + ".png", "mask",
                "Layer " + std::to_string(l) + " (" + kinds.short_text(l) + "), head " + std::to_string(head) + ": HiP's key blocks per query block" + dense,
                encode_png(render_mask_figure(mask, mask_figure_text(mask, a, l, head, figure_run(c)), o.mask_px, style))};
  });
  for (Figure& f : masks) out.push_back(std::move(f));
  for (size_t i = 0; i < c.locality.size(); ++i) {
    const int64_t l = c.view_layers[i];
    const std::vector<LocalityView> heads = captured_locality_views(c, i, o.delta);
    const size_t first = static_cast<size_t>(std::clamp<int64_t>(o.head, 0, std::max<int64_t>(0, static_cast<int64_t>(heads.size()) - 1)));
    const size_t drawn = std::min<size_t>(heads.size() - first, static_cast<size_t>(std::max<int64_t>(1, o.locality_heads)));
    std::vector<LocalityView> some(heads.begin() + static_cast<std::ptrdiff_t>(first),
                                   heads.begin() + static_cast<std::ptrdiff_t>(first + drawn));
    const std::string note = some.empty() || some[0].rule_note.empty() ? "" : "; pooled over " + some[0].rule_note;
    // The plot draws a few heads only: the caption and title say which, of how many.
    const std::string which = drawn < heads.size() ? "heads " + std::to_string(first) + "-" + std::to_string(first + drawn - 1) +
                                                         " of " + std::to_string(heads.size())
                                                   : "all " + std::to_string(heads.size()) + " heads";
    out.push_back({"locality_L" + std::to_string(l) + ".svg", "locality",
                   "Layer " + std::to_string(l) + ", " + which + ": histogram of score differences (head " +
                       std::to_string(first) + (o.delta > 0 ? ", Delta " + std::to_string(o.delta) : ", first Delta") +
                       ") and their mean and std against key distance Delta" + note,
                   svg_locality(some, "Score locality, layer " + std::to_string(l) + ", " + which, style, context)});
  }
  if (!c.locality.empty() && !c.locality.back().empty()) {
    const auto& heads = c.locality.back();
    const hip::ScoreLocality& h0 = heads[static_cast<size_t>(std::clamp<int64_t>(o.head, 0, static_cast<int64_t>(heads.size()) - 1))];
    const int64_t last_layer = c.view_layers[c.locality.size() - 1];
    std::vector<size_t> picks;
    for (size_t i = 0; i < h0.deltas.size(); ++i)
      if (h0.deltas[i].delta == o.delta) picks.push_back(i);
    if (picks.empty() && !h0.deltas.empty()) picks.push_back(0);
    if (picks.size() == 1 && o.delta <= 0 && h0.deltas.size() > 1) picks.push_back(h0.deltas.size() - 1);
    for (size_t i : picks) {
      const hip::DeltaStats& d = h0.deltas[i];
      const LocalityView v = captured_locality_views(c, c.locality.size() - 1, d.delta)[static_cast<size_t>(&h0 - heads.data())];
      const std::string note = v.rule_note.empty() ? "" : "; pooled over " + v.rule_note;
      const std::string lh = "L" + std::to_string(last_layer) + "_H" + std::to_string(h0.head);
      out.push_back({"locality_hist_" + lh + "_D" + std::to_string(d.delta) + ".svg", "locality",
                     "Layer " + std::to_string(last_layer) + ", head " + std::to_string(h0.head) +
                         ": histogram of score differences at Delta = " + std::to_string(d.delta) + " with the fitted normal" + note,
                     svg_locality_histogram(v, "Score differences, layer " + std::to_string(last_layer) + ", head " + std::to_string(h0.head) +
                                                   ", Delta = " + std::to_string(d.delta), style, context)});
    }
  }
  for (const CapturedTrace& t : c.traces) {
    const std::string name = "iterations_L" + std::to_string(t.layer) + "_H" + std::to_string(t.trace.head) + "_Q" +
                             std::to_string(t.trace.query_block) + ".svg";
    out.push_back({name, "iterations", iterations_title(t) + ": one row per step",
                   svg_iterations(captured_trace_view(c, t), iterations_title(t), iterations_subtitle(c, t), style)});
  }
  if (c.has_offload)
    out.push_back({"hit_ratio.svg", "cache", "Hit ratio of the offloading banks per decode step", svg_hit_ratio_per_step(c.offload, style, context)});
  if (c.methods.size() > 1) {
    // One curve per method the capture holds: the comparison `capture --methods` was made for.
    out.push_back({"methods_recall.svg", "methods", "Recall vs the oracle per layer (mean over heads), one curve per method",
                   svg_method_layers(c, &HeadQuality::recall, "Recall vs oracle per layer, by method", "recall", style, context)});
    out.push_back({"methods_out_err.svg", "methods",
                   "Attention output relative error per layer (mean over heads), one curve per method",
                   svg_method_layers(c, &HeadQuality::out_rel_err, "Output relative error per layer, by method",
                                     "||O_method - O_dense|| / ||O_dense||", style, context)});
  }
  if (c.has_view("latency"))
    out.push_back({"latency.svg", "latency",
                   cpu_reference_device(c.info.run.device)
                       ? "Wall-clock of the CPU correctness run, dense vs HiP's float64 reference (not a speed measurement)"
                       : "Latency breakdown on " + c.info.run.device + ", dense vs HiP",
                   svg_latency_bars(a, c.info.run.device, style, context)});
  return out;
}

std::vector<Capture::Image> render_capture_images(const Capture& c, const FigureOptions& options) {
  std::vector<Capture::Image> images;
  for (Figure& f : capture_figures(c, options)) images.push_back({f.name, std::move(f.bytes)});
  return images;
}

}  // namespace hipstudio::captures
