// CSV tables, the Chrome trace, the analyze JSON and the file writers of exports.h.
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "captures/atomic_file.h"
#include "captures/exports.h"
#include "viz/svg_pdf.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

std::string g17(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

void latency_rows(std::ostringstream& s, const char* side, const LatencyBreakdown& l) {
  auto row = [&](const char* phase, const std::string& layer, const ComponentMs& c) {
    s << side << ',' << phase << ',' << layer << ',' << g17(c.mask) << ',' << g17(c.sparse) << ',' << g17(c.dense) << ','
      << g17(c.other) << ',' << g17(c.total()) << "\n";
  };
  for (size_t i = 0; i < l.prefill_layers.size(); ++i) row("prefill", std::to_string(i), l.prefill_layers[i]);
  row("prefill", "all", l.prefill);
  for (size_t i = 0; i < l.decode_layers.size(); ++i) row("decode_step", std::to_string(i), l.decode_layers[i]);
  row("decode_step", "all", l.decode_step);
}

// Appends one side's slices at pid; returns nothing (cursor advances in µs).
void trace_side(json& events, int pid, const SideResult& side, const std::vector<DecodeStepRecord>& steps) {
  double t = 0;
  auto block = [&](const std::string& name, const std::string& cat, const std::vector<ComponentMs>& layers, json args) {
    json children = json::array();
    const double start = t;
    for (size_t l = 0; l < layers.size(); ++l) {
      const double layer_start = t;
      const double parts[4] = {layers[l].mask, layers[l].sparse, layers[l].dense, layers[l].other};
      const char* names[4] = {"mask estimation", "sparse attention", "dense attention", "other"};
      json parts_events = json::array();
      for (int k = 0; k < 4; ++k) {
        const double dur = parts[k] > 0 ? parts[k] * 1000.0 : 0.0;
        if (dur <= 0) continue;
        parts_events.push_back({{"name", names[k]}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", 1}, {"ts", t}, {"dur", dur}});
        t += dur;
      }
      children.push_back({{"name", "layer " + std::to_string(l)}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", 1},
                          {"ts", layer_start}, {"dur", t - layer_start}, {"args", {{"layer", l}}}});
      for (json& e : parts_events) children.push_back(std::move(e));
    }
    events.push_back({{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", 1}, {"ts", start}, {"dur", t - start}, {"args", args}});
    for (json& e : children) events.push_back(std::move(e));
  };
  block("prefill", "prefill", side.latency.prefill_layers, {{"tokens", side.nll.size() + 1}});
  if (!side.latency.decode_layers.empty())
    for (const DecodeStepRecord& s : steps)
      block("decode step " + std::to_string(s.step), "decode", side.latency.decode_layers,
            {{"step", s.step}, {"position", s.position}, {"refreshed", s.refreshed}, {"timing", "mean per decode step"}});
}

std::filesystem::path make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the folder (" + ec.message() + ")");
  return dir;
}

}  // namespace

std::string csv_layer_head_metrics(const Capture& c) {
  std::ostringstream s;
  s << "layer,head,dense_layer,recall,random_recall,mass,random_mass,out_rel_err,random_out_rel_err\n";
  for (const LayerQuality& l : c.analysis.layers)
    for (size_t h = 0; h < l.heads.size(); ++h) {
      const HeadQuality& q = l.heads[h];
      s << l.layer << ',' << h << ',' << (l.dense ? 1 : 0) << ',' << g17(q.recall) << ',' << g17(q.random_recall) << ','
        << g17(q.mass) << ',' << g17(q.random_mass) << ',' << g17(q.out_rel_err) << ',' << g17(q.random_out_rel_err) << "\n";
    }
  return s.str();
}

std::string csv_token_nll(const Capture& c) {
  const PairedAnalysis& a = c.analysis;
  std::ostringstream s;
  s << "position,token,next_token,dense_nll,hip_nll,hip_minus_dense\n";
  for (size_t i = 0; i < a.dense.nll.size() && i < a.hip.nll.size() && i + 1 < a.prompt_ids.size(); ++i)
    s << i << ',' << a.prompt_ids[i] << ',' << a.prompt_ids[i + 1] << ',' << g17(a.dense.nll[i]) << ',' << g17(a.hip.nll[i]) << ','
      << g17(a.hip.nll[i] - a.dense.nll[i]) << "\n";
  return s.str();
}

std::string csv_latency(const Capture& c) {
  std::ostringstream s;
  s << "side,phase,layer,mask_ms,sparse_ms,dense_ms,other_ms,total_ms\n";
  latency_rows(s, "dense", c.analysis.dense.latency);
  latency_rows(s, "hip", c.analysis.hip.latency);
  return s.str();
}

std::string csv_hit_ratio_per_step(const Capture& c) {
  std::ostringstream s;
  s << "step,context,bank_tokens,accesses,hits,misses,bytes,hit_ratio\n";
  if (!c.has_offload) return s.str();
  for (const offload::ContextStats* ctx : {&c.offload.mask, &c.offload.sparse})
    for (size_t i = 0; i < ctx->per_step_total.size(); ++i) {
      const offload::BankCounts& b = ctx->per_step_total[i];
      s << i << ',' << offload::offload_context_name(ctx->context) << ',' << ctx->bank_tokens << ',' << b.accesses << ',' << b.hits
        << ',' << b.misses << ',' << b.bytes << ',' << (b.accesses > 0 ? g17(offload::hit_ratio(b)) : "") << "\n";
    }
  return s.str();
}

std::string csv_decode_steps(const Capture& c) {
  std::ostringstream s;
  s << "step,position,refreshed,dense_token,hip_token,mask_tokens_accessed,sparse_tokens_accessed\n";
  for (const DecodeStepRecord& d : c.analysis.decode)
    s << d.step << ',' << d.position << ',' << (d.refreshed ? 1 : 0) << ',' << d.dense_token << ',' << d.hip_token << ','
      << d.mask_tokens_accessed << ',' << d.sparse_tokens_accessed << "\n";
  return s.str();
}

json chrome_trace(const Capture& c) {
  json events = json::array();
  const char* names[2] = {"dense", "HiP"};
  for (int pid = 1; pid <= 2; ++pid) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", names[pid - 1]}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "forward pass"}}}});
    trace_side(events, pid, pid == 1 ? c.analysis.dense : c.analysis.hip, c.analysis.decode);
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"tool", "hipstudio " + c.info.run.tool_version}, {"model", c.info.run.model}, {"device", c.info.run.device},
                         {"created", c.info.created}}}};
}

json capture_analysis_json(const Capture& c) {
  return analysis_to_json(c.analysis, c.info.run, c.has_offload ? &c.offload : nullptr, c.has_offload ? &c.offload_config : nullptr);
}

std::vector<std::string> write_csv_exports(const Capture& c, const std::string& dir) {
  const auto d = make_dir(dir);
  const std::pair<const char*, std::string> tables[] = {
      {"layer_head_metrics.csv", csv_layer_head_metrics(c)}, {"token_nll.csv", csv_token_nll(c)},
      {"latency.csv", csv_latency(c)}, {"hit_ratio_per_step.csv", csv_hit_ratio_per_step(c)},
      {"decode_steps.csv", csv_decode_steps(c)}};
  std::vector<std::string> paths;
  for (const auto& [name, text] : tables) {
    paths.push_back((d / name).string());
    write_file_atomic(paths.back(), text);
  }
  return paths;
}

std::vector<std::string> write_figure_exports(const Capture& c, const std::string& dir, const FigureOptions& figures) {
  const auto d = make_dir(dir);
  std::vector<std::string> paths;
  const std::vector<Figure> all = capture_figures(c, figures);
  for (const Figure& f : all) {
    // A vector figure is also written as PDF, drawn from the same SVG (viz::svg_to_pdf).
    const std::string pdf_name = f.png() ? std::string() : f.name.substr(0, f.name.size() - 4) + ".pdf";
    const bool every = figures.only.empty() || figures.only == f.view;
    if (every || figures.only == f.name) {
      paths.push_back((d / f.name).string());
      write_file_atomic(paths.back(), f.bytes);
    }
    if (!pdf_name.empty() && (every || figures.only == pdf_name)) {
      paths.push_back((d / pdf_name).string());
      write_file_atomic(paths.back(), viz::svg_to_pdf(f.bytes));
    }
  }
  if (paths.empty() && !figures.only.empty()) throw InputError("the capture has no figure '" + figures.only + "'; " + figure_choices(all));
  return paths;
}

std::string figure_choices(const std::vector<Figure>& figures) {
  std::string names, views;
  for (const Figure& f : figures) {
    names += (names.empty() ? "" : ", ") + f.name;
    if (!f.png()) names += ", " + f.name.substr(0, f.name.size() - 4) + ".pdf";
    if (views.find(f.view) == std::string::npos) views += (views.empty() ? "" : ", ") + f.view;
  }
  if (figures.empty()) return "it holds no figures (capture it with --views)";
  return "its figures are " + names + " (or a view's: " + views + ")";
}

std::vector<std::string> write_mask_tiles(const Capture& c, const std::string& dir, int64_t tile) {
  if (tile < 1) throw InputError("mask tiles must be at least 1 pixel wide");
  if (c.masks.empty()) throw InputError("this capture holds no masks (it was made without the mask view)");
  const auto d = make_dir(dir);
  std::vector<std::string> paths;
  const int64_t tokens = static_cast<int64_t>(c.analysis.prompt_ids.size());
  for (size_t l = 0; l < c.masks.size(); ++l)
    for (int64_t h = 0; h < c.masks[l].hip.heads; ++h) {
      const MaskExport mask = mask_export(c.masks[l], c.analysis.options.hip.hip, tokens, h);
      const int64_t cols = (mask.full_width() + tile - 1) / tile;
      const auto tiles = render_mask_tiles(mask, tile);
      for (size_t i = 0; i < tiles.size(); ++i) {
        const std::string name = "mask_L" + std::to_string(c.view_layers[l]) + "_H" + std::to_string(h) + "_r" + std::to_string(i / cols) + "_c" +
                                 std::to_string(i % cols) + ".png";
        paths.push_back((d / name).string());
        write_file_atomic(paths.back(), encode_png(tiles[i]));
      }
    }
  return paths;
}

std::vector<std::string> write_npy_exports(const Capture& c, const std::string& dir) {
  const auto d = make_dir(dir);
  std::vector<std::string> paths;
  // The capture's own .npy entries, byte for byte (encode once, take the arrays back out).
  for (const ZipEntry& e : zip_decode(encode_capture(c), "capture")) {
    if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0) continue;
    std::string flat = e.name;
    for (size_t at = flat.find('/'); at != std::string::npos; at = flat.find('/', at + 2)) flat.replace(at, 1, "__");
    paths.push_back((d / flat).string());
    write_file_atomic(paths.back(), e.data);
  }
  return paths;
}

}  // namespace hipstudio::captures
