#include "captures/export_view.h"

#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "captures/npy.h"
#include "captures/svg_plots.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "viz/svg_pdf.h"

#include <stdexcept>

namespace hipstudio::captures {
namespace {

template <class T>
std::string npy(const std::vector<int64_t>& shape, const std::vector<T>& v) {
  const auto image = encode_npy(NpyTypeOf<T>::value, shape, v.data());
  return std::string(reinterpret_cast<const char*>(image.data()), image.size());
}

// Rows [head] of an (H, ...) array, or all of it when head < 0.
template <class T>
std::string head_slice(std::vector<int64_t> shape, const std::vector<T>& v, int64_t head) {
  if (head < 0) return npy(shape, v);
  const size_t per = v.size() / static_cast<size_t>(shape[0]);
  shape.erase(shape.begin());
  return npy(shape, std::vector<T>(v.begin() + head * per, v.begin() + (head + 1) * per));
}

viz::FigureStyle figure_style(const std::string& name) {
  try {
    return viz::figure_style(name);
  } catch (const std::invalid_argument&) {
    throw InputError("unknown figure style '" + name + "': paper or dark");
  }
}

[[noreturn]] void bad(const ExportRequest& r) {
  throw InputError("cannot export --what " + r.what + " --format " + r.format + "; the choices are:\n" + export_choices());
}

}  // namespace

const char* export_choices() {
  return "  every svg below: also pdf (the same drawing, one page, Helvetica)\n"
         "  mask: png (a figure with title, ticks and legend, longest side --px; 0 = the bare picture at full detail), svg (the\n"
         "        same figure, vector), npy (HiP's key blocks; --head for one)\n"
         "  iterations: svg (the search of a traced query block of --layer / --head, one row per step)\n"
         "  oracle, random: npy (their key blocks)\n"
         "  recall: npy (per head and query block, vs the oracle)\n"
         "  locality: svg (histogram and mean/std against Delta; --delta D for that histogram alone), npy (stats: delta, pairs, mean, std, lo, hi, kl)\n"
         "  hit-ratio: svg, csv\n"
         "  latency: svg, csv\n"
         "  nll: csv, npy (dense and HiP, 2 x tokens-1)\n"
         "  metrics: csv (per layer and head), json (the analyze schema)\n"
         "  trace: json (Chrome trace events)\n"
         "  array: npy (--name GROUP/NAME, any array of the capture)";
}

std::string export_view(const Capture& c, const ExportRequest& r) {
  const PairedAnalysis& a = c.analysis;
  const int64_t layer = r.layer < 0 ? (c.view_layers.empty() ? 0 : c.view_layers.back()) : r.layer;
  // The index of --layer among the capture's view layers (the per-layer views it holds).
  auto need_layer = [&](size_t available, const char* view) {
    if (available == 0) throw InputError(std::string("this capture holds no ") + view + " view (capture it with --views ..." + view + ")");
    const int64_t i = c.view_index(layer);
    if (i < 0 || i >= static_cast<int64_t>(available)) {
      std::string listed;
      for (int64_t l : c.view_layers) listed += (listed.empty() ? "" : ",") + std::to_string(l);
      throw InputError("--layer " + std::to_string(r.layer) + " is not among the capture's view layers (" + listed +
                       "); pick one of those, or capture with --inputs-layers naming it");
    }
    return static_cast<size_t>(i);
  };
  auto need_head = [&](int64_t heads) {
    if (r.head >= heads) throw InputError("--head " + std::to_string(r.head) + " is outside the capture's " + std::to_string(heads) + " heads");
  };
  const std::string& w = r.what;
  if (r.format == "pdf") {
    // Every vector figure as PDF: its SVG's drawing commands as a one-page PDF.
    if (w != "mask" && w != "iterations" && w != "locality" && w != "hit-ratio" && w != "latency") bad(r);
    ExportRequest svg = r;
    svg.format = "svg";
    return viz::svg_to_pdf(export_view(c, svg));
  }
  const std::string context = figure_context(c);
  const std::string& f = r.format;
  if (w == "mask" || w == "oracle" || w == "random" || w == "recall") {
    const LayerMaskViews& m = c.masks[need_layer(c.masks.size(), "mask")];
    need_head(m.hip.heads);
    const std::vector<int64_t> hq{m.hip.heads, m.hip.query_blocks}, hqk{m.hip.heads, m.hip.query_blocks, m.hip.kb};
    if (w == "mask" && (f == "png" || f == "svg")) {
      const int64_t head = std::max<int64_t>(r.head, 0);
      const viz::FigureStyle style = figure_style(r.style);
      const MaskExport mask = mask_export(m, a.options.hip.hip, static_cast<int64_t>(a.prompt_ids.size()), head, style);
      const viz::MaskFigureText text = mask_figure_text(mask, a, layer, head, figure_run(c));
      if (f == "svg") return svg_mask_figure(mask, text, style);
      if (r.px > 0) return encode_png(render_mask_figure(mask, text, r.px, style));
      return encode_png(render_mask_tiles(mask, std::max(mask.full_height(), mask.full_width())).at(0));
    }
    if (f != "npy") bad(r);
    if (w == "recall") return head_slice(hq, m.recall, r.head);
    const hip::MaskResult& mr = w == "mask" ? m.hip : w == "oracle" ? m.oracle : m.random;
    return head_slice(hqk, mr.blocks, r.head);
  }
  if (w == "locality") {
    const size_t index = need_layer(c.locality.size(), "locality");
    const auto& heads = c.locality[index];
    need_head(static_cast<int64_t>(heads.size()));
    if (f == "svg") {
      const std::vector<int64_t>& stored = c.locality_params.deltas;
      if (r.delta > 0 && std::find(stored.begin(), stored.end(), r.delta) == stored.end())
        throw InputError("--delta " + std::to_string(r.delta) + " was not captured (see the manifest's locality.deltas)");
      const std::vector<LocalityView> views = captured_locality_views(c, index, r.delta);
      if (r.delta > 0) {
        const LocalityView& v = views[static_cast<size_t>(std::max<int64_t>(r.head, 0))];
        if (r.with_curves)
          return svg_locality({v}, "Score locality, layer " + std::to_string(layer) + ", head " + std::to_string(v.head) +
                                       ", histogram at Delta = " + std::to_string(r.delta), figure_style(r.style), context);
        return svg_locality_histogram(v, "Score differences, layer " + std::to_string(layer) + ", head " + std::to_string(v.head) +
                                             ", Delta = " + std::to_string(r.delta), figure_style(r.style), context);
      }
      const std::vector<LocalityView> some = r.head >= 0 ? std::vector<LocalityView>{views[static_cast<size_t>(r.head)]} : views;
      return svg_locality(some, "Score locality, layer " + std::to_string(layer), figure_style(r.style), context);
    }
    if (f != "npy") bad(r);
    std::vector<double> stats;
    for (const hip::ScoreLocality& h : heads)
      for (const hip::DeltaStats& d : h.deltas)
        stats.insert(stats.end(), {static_cast<double>(d.delta), static_cast<double>(d.pairs), d.mean, d.stddev, d.hist_lo, d.hist_hi,
                                   d.kl_to_normal});
    return head_slice({static_cast<int64_t>(heads.size()), static_cast<int64_t>(c.locality_params.deltas.size()), 7}, stats, r.head);
  }
  if (w == "iterations") {
    if (f != "svg") bad(r);
    for (const CapturedTrace& t : c.traces) {
      if (t.layer != layer || (r.head >= 0 && t.trace.head != r.head)) continue;
      return svg_iterations(captured_trace_view(c, t), iterations_title(t), iterations_subtitle(c, t), figure_style(r.style));
    }
    throw InputError("the capture holds no trace of layer " + std::to_string(layer) + (r.head >= 0 ? ", head " + std::to_string(r.head) : "") +
                     " (capture it with --views ...,iterations --trace L:H:QB)");
  }
  if (w == "hit-ratio") {
    if (!c.has_offload) throw InputError("this capture holds no cache view (capture it with --views ...,cache)");
    if (f == "svg") return svg_hit_ratio_per_step(c.offload, figure_style(r.style), context);
    if (f == "csv") return csv_hit_ratio_per_step(c);
    bad(r);
  }
  if (w == "latency") {
    if (f == "svg") return svg_latency_bars(a, c.info.run.device, figure_style(r.style), context);
    if (f == "csv") return csv_latency(c);
    bad(r);
  }
  if (w == "nll") {
    if (f == "csv") return csv_token_nll(c);
    if (f != "npy") bad(r);
    std::vector<double> v = a.dense.nll;
    v.insert(v.end(), a.hip.nll.begin(), a.hip.nll.end());
    return npy({2, static_cast<int64_t>(a.dense.nll.size())}, v);
  }
  if (w == "metrics") {
    if (f == "csv") return csv_layer_head_metrics(c);
    if (f == "json") return capture_analysis_json(c).dump(1) + "\n";
    bad(r);
  }
  if (w == "trace") {
    if (f == "json") return chrome_trace(c).dump() + "\n";
    bad(r);
  }
  if (w == "array") {
    if (f != "npy") bad(r);
    for (const ZipEntry& e : zip_decode(encode_capture(c), "capture"))
      if (e.name == r.name + ".npy") return e.data;
    throw InputError("the capture holds no array '" + r.name + "' (`unzip -l CAPTURE` lists them; leave out the .npy)");
  }
  bad(r);
}

}  // namespace hipstudio::captures
