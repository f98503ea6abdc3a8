// html_report: one self-contained, printable HTML file (no scripts, no network).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "captures/exports.h"
#include "captures/figures.h"
#include "captures/layer_kinds.h"
#include "captures/mask_png.h"
#include "captures/method_comparison_report.h"
#include "captures/svg_plots.h"
#include "engine/analysis/hip_layer_means.h"

namespace hipstudio::captures {
namespace {

std::string fmt(double v, const char* f = "%.4f") {
  if (!std::isfinite(v)) return "n/a";
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

const char* kCss = R"(body{font-family:Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f2f4f7}td.n{text-align:right;font-variant-numeric:tabular-nums}.headline td.n{font-weight:bold}
figure{margin:1em 0;page-break-inside:avoid;break-inside:avoid}figcaption{font-size:.9em;color:#555}
figure img,figure svg{max-width:100%;height:auto;border:1px solid #eee}figure img{image-rendering:pixelated;min-width:320px}.prompt{white-space:pre-wrap;background:#f7f7f7;padding:.6em;font-family:monospace;font-size:.9em}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}table{page-break-inside:avoid}a{color:inherit}})";

void row(std::ostringstream& s, const std::string& k, const std::string& v, bool numeric = true) {
  s << "<tr><th>" << xml_escape(k) << "</th><td" << (numeric ? " class=\"n\"" : "") << ">" << xml_escape(v) << "</td></tr>\n";
}

}  // namespace

std::string base64(const std::string& bytes) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string html_report(const Capture& c, const FigureOptions& figures) {
  const PairedAnalysis& a = c.analysis;
  const HipModelParams& p = a.options.hip;
  const LayerKinds kinds = layer_kinds(a);
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n"
    << "<title>HiP Studio report: " << xml_escape(c.info.run.model) << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n";
  s << "<h1>HiP Studio report</h1>\n<p>" << xml_escape(c.info.run.model) << " (" << xml_escape(c.info.run.architecture) << ") on "
    << xml_escape(c.info.run.device) << ", captured " << xml_escape(c.info.created) << " with hipstudio "
    << xml_escape(c.info.run.tool_version) << " (capture format " << c.format_version << ").</p>\n";

  // Headline metrics.
  const double speed_prefill = a.hip.latency.prefill.total() > 0 ? a.dense.latency.prefill.total() / a.hip.latency.prefill.total() : NAN;
  const double speed_decode =
      a.hip.latency.decode_step.total() > 0 ? a.dense.latency.decode_step.total() / a.hip.latency.decode_step.total() : NAN;
  s << "<h2 id=\"metrics\">Headline metrics</h2>\n<table class=\"headline\">\n";
  row(s, "perplexity, dense", fmt(a.dense.ppl));
  row(s, "perplexity, HiP", fmt(a.hip.ppl));
  row(s, "KL(dense || HiP), mean per position", fmt(a.kl, "%.6f"));
  row(s, "top-1 agreement", fmt(a.top1_agreement));
  row(s, "recall vs oracle, HiP (mean over HiP layers and heads)", fmt(mean_over_hip_layers(a, &HeadQuality::recall)));
  row(s, "recall vs oracle, random baseline", fmt(mean_over_hip_layers(a, &HeadQuality::random_recall)));
  row(s, "attention mass kept, HiP", fmt(mean_over_hip_layers(a, &HeadQuality::mass)));
  if (cpu_reference_device(c.info.run.device)) {
    // HiP ran the float64 CPU reference against LibTorch's dense attention: a ratio of the two is
    // no speedup, so none is printed (the GUI's Latency panel says the same).
    row(s, "speedup", "not measured: on " + (c.info.run.device.empty() ? std::string("the CPU") : c.info.run.device) +
                          " HiP runs the float64 correctness reference (run on CUDA for HiP's kernels)", false);
  } else {
    row(s, "speedup, prefill (dense ms / HiP ms)", fmt(speed_prefill, "%.3f"));
    row(s, "speedup, decode step", fmt(speed_decode, "%.3f"));
  }
  row(s, "decode steps, mask refreshes", std::to_string(a.decode.size()) + ", " + std::to_string(a.mask_refreshes));
  if (c.has_offload) {
    row(s, "hit ratio, mask-estimation bank (" + std::to_string(c.offload.mask.bank_tokens) + " tokens)",
        fmt(offload::hit_ratio(c.offload.mask.total)));
    row(s, "hit ratio, sparse-attention bank (" + std::to_string(c.offload.sparse.bank_tokens) + " tokens)",
        fmt(offload::hit_ratio(c.offload.sparse.total)));
  }
  s << "</table>\n";
  if (c.methods.size() > 1) {
    s << "<h2 id=\"methods\">Methods compared</h2>\n<p>Every method as the sparse side at the same budget against one dense "
         "prefill; recall, mass and output error are means over the layers HiP replaces and their heads. The sections below "
         "show the first method, "
      << xml_escape(c.methods.front().choice.name) << " (<code>hipstudio export --method NAME</code> gives another's).</p>\n"
      << method_table_html(c);
  }

  // Parameters.
  s << "<h2 id=\"parameters\">Parameters</h2>\n<table>\n";
  row(s, "model", c.info.run.model, false);
  row(s, "model SHA-256", c.info.model_sha256.empty() ? "not recorded" : c.info.model_sha256, false);
  row(s, "device, dtype", c.info.run.device + ", " + c.info.dtype, false);
  row(s, "k (top-k tokens)", std::to_string(p.hip.k));
  row(s, "b_q, b_k", std::to_string(p.hip.b_q) + ", " + std::to_string(p.hip.b_k));
  row(s, "b_sq, b_sk", std::to_string(p.hip.b_sq) + ", " + std::to_string(p.hip.b_sk));
  row(s, "sink, window", std::to_string(p.hip.sink) + ", " + std::to_string(p.hip.window));
  row(s, "representative position rho", fmt(p.hip.rho, "%g"));
  row(s, "dense layers, refresh every r_m", kinds.dense_layers_text() + ", r_m " + std::to_string(p.refresh_every), false);
  row(s, "layers by kind", kinds.summary(), false);
  row(s, "decode steps", std::to_string(a.options.decode_steps));
  row(s, "prompt tokens", std::to_string(a.prompt_ids.size()));
  if (c.has_offload)
    row(s, "offloading", std::string(offload::page_table_kind_name(c.offload_config.table)) + " page table, " +
                             offload::eviction_policy_name(c.offload_config.policy) + ", cache factor " +
                             fmt(c.offload_config.cache_factor, "%g"), false);
  s << "</table>\n<p>Prompt:</p>\n<div class=\"prompt\">" << xml_escape(c.info.run.prompt) << "</div>\n";

  // Figures.
  s << "<h2 id=\"figures\">Figures</h2>\n";
  if (!c.masks.empty()) {
    s << "<p class=\"legend\">Masks:";
    for (const auto& [name, color] : mask_legend(export_mask_palette(true))) {
      char css[8];
      std::snprintf(css, sizeof css, "#%02x%02x%02x", color & 0xff, (color >> 8) & 0xff, (color >> 16) & 0xff);
      s << "<span style=\"background:" << css << "\"></span>" << name;
    }
    s << "</p>\n";
  }
  int index = 0;
  for (const Figure& f : capture_figures(c, figures)) {
    s << "<figure id=\"fig-" << xml_escape(f.name) << "\" data-view=\"" << f.view << "\">\n";
    if (f.png()) {
      s << "<img alt=\"" << xml_escape(f.caption) << "\" src=\"data:image/png;base64," << base64(f.bytes) << "\">\n";
    } else {
      s << f.bytes;  // an <svg> element: HTML5 takes SVG inline
    }
    s << "<figcaption>Figure " << ++index << ". " << xml_escape(f.caption) << "</figcaption>\n</figure>\n";
  }

  // Tables.
  s << "<h2 id=\"layers\">Per-layer quality (mean over heads)</h2>\n<table>\n<tr><th>layer</th><th>runs</th><th>recall</th><th>random "
       "recall</th><th>mass</th><th>output rel. error</th></tr>\n";
  for (const LayerQuality& l : a.layers) {
    double r = 0, rr = 0, m = 0, e = 0;
    for (const HeadQuality& h : l.heads) r += h.recall, rr += h.random_recall, m += h.mass, e += h.out_rel_err;
    const double n = l.heads.empty() ? NAN : static_cast<double>(l.heads.size());
    s << "<tr><td class=\"n\">" << l.layer << "</td><td>" << kinds.text(l.layer) << "</td><td class=\"n\">" << fmt(r / n)
      << "</td><td class=\"n\">" << fmt(rr / n) << "</td><td class=\"n\">" << fmt(m / n) << "</td><td class=\"n\">" << fmt(e / n, "%.5f")
      << "</td></tr>\n";
  }
  s << "</table>\n<h2 id=\"latency\">Latency (ms)</h2>\n<table>\n<tr><th>run</th><th>mask estimation</th><th>sparse attention</th>"
       "<th>dense attention</th><th>other</th><th>total</th></tr>\n";
  const std::pair<const char*, ComponentMs> lat[] = {{"dense, prefill", a.dense.latency.prefill}, {"HiP, prefill", a.hip.latency.prefill},
                                                     {"dense, decode step (mean)", a.dense.latency.decode_step},
                                                     {"HiP, decode step (mean)", a.hip.latency.decode_step}};
  for (const auto& [name, v] : lat)
    s << "<tr><td>" << name << "</td><td class=\"n\">" << fmt(v.mask, "%.3f") << "</td><td class=\"n\">" << fmt(v.sparse, "%.3f")
      << "</td><td class=\"n\">" << fmt(v.dense, "%.3f") << "</td><td class=\"n\">" << fmt(v.other, "%.3f") << "</td><td class=\"n\">"
      << fmt(v.total(), "%.3f") << "</td></tr>\n";
  s << "</table>\n";
  if (!c.traces.empty()) {
    s << "<h2 id=\"iterations\">Search traces</h2>\n<table>\n<tr><th>layer</th><th>head</th><th>query block</th><th>search range "
         "(key blocks)</th><th>iterations</th><th>branches scored</th><th>selected blocks</th></tr>\n";
    for (const CapturedTrace& t : c.traces) {
      size_t branches = 0;
      for (const hip::TraceIteration& it : t.trace.iterations) branches += it.branches.size();
      std::string blocks;
      for (size_t i = 0; i < t.trace.blocks.size(); ++i) blocks += (i ? " " : "") + std::to_string(t.trace.blocks[i]);
      s << "<tr><td class=\"n\">" << t.layer << "</td><td class=\"n\">" << t.trace.head << "</td><td class=\"n\">" << t.trace.query_block
        << "</td><td>[" << t.trace.lo << ", " << t.trace.hi << ")</td><td class=\"n\">" << t.trace.iterations.size()
        << "</td><td class=\"n\">" << branches << "</td><td>" << blocks << "</td></tr>\n";
    }
    s << "</table>\n";
  }
  if (!a.decode.empty()) {
    s << "<h2 id=\"decode\">Decode steps</h2>\n<table>\n<tr><th>step</th><th>position fed</th><th>refreshed</th><th>dense next token (position + 1)</th>"
         "<th>HiP next token (position + 1)</th><th>mask keys read</th><th>sparse keys read</th></tr>\n";
    for (const DecodeStepRecord& d : a.decode)
      s << "<tr><td class=\"n\">" << d.step << "</td><td class=\"n\">" << d.position << "</td><td>" << (d.refreshed ? "yes" : "")
        << "</td><td class=\"n\">" << d.dense_token << "</td><td class=\"n\">" << d.hip_token << "</td><td class=\"n\">"
        << d.mask_tokens_accessed << "</td><td class=\"n\">" << d.sparse_tokens_accessed << "</td></tr>\n";
    s << "</table>\n";
  }
  s << "</body>\n</html>\n";
  return s.str();
}

}  // namespace hipstudio::captures
