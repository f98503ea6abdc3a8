#pragma once
// Report material from a capture: CSV tables, Chrome trace events, the analyze JSON, .npy arrays
// and a self-contained HTML report. The string functions are pure (tests read them); the write_*
// functions write files atomically and return the paths they wrote.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/capture.h"
#include "captures/figures.h"

namespace hipstudio::captures {

// CSV tables (RFC 4180, header row, '.' decimals, numbers with 17 significant digits).
std::string csv_layer_head_metrics(const Capture& c);  // layer,head,dense_layer,recall,random_recall,mass,...
std::string csv_token_nll(const Capture& c);           // position,token,next_token,dense_nll,hip_nll,hip_minus_dense
std::string csv_latency(const Capture& c);             // side,phase,layer,mask_ms,sparse_ms,dense_ms,other_ms,total_ms
std::string csv_hit_ratio_per_step(const Capture& c);  // step,context,bank_tokens,accesses,hits,misses,bytes,hit_ratio
                                                       // (ratio empty for a step without reads; no rows without cache)
std::string csv_decode_steps(const Capture& c);        // step,position,refreshed,dense_token,hip_token,...

// Chrome trace event format ("X" complete events, ts/dur in microseconds), for Perfetto and
// chrome://tracing: one process per side (dense, HiP); prefill and each decode step contain a
// slice per layer, which contains mask estimation, sparse attention, dense attention and other.
// Parents are exactly the sum of their children, laid end to end, so slices nest. Decode steps use
// the mean per-step breakdown (the analysis keeps no per-step timings).
nlohmann::json chrome_trace(const Capture& c);

// The `analyze` schema (analysis_to_json) with the capture's offloading section.
nlohmann::json capture_analysis_json(const Capture& c);

// One HTML file: parameters, headline metrics (perplexity, KL, top-1, recall, speedup, hit ratios),
// every figure (SVG inline, PNG as data: URIs), tables; no network access; print CSS.
std::string html_report(const Capture& c, const FigureOptions& figures = {});

std::string base64(const std::string& bytes);

// Writes the CSV tables into `dir` (created if missing); returns the paths.
std::vector<std::string> write_csv_exports(const Capture& c, const std::string& dir);
// Writes the figures into `dir`: each PNG, each SVG and beside it the same drawing as PDF. With
// FigureOptions::only, just that file (a name write_figure_exports writes: "latency.pdf") or that
// view's files ("latency"); a name the capture has no figure for throws InputError listing them.
std::vector<std::string> write_figure_exports(const Capture& c, const std::string& dir, const FigureOptions& figures = {});
// "its figures are mask_L3_H0.png, latency.svg, latency.pdf, ... (or a view's: mask, latency)".
std::string figure_choices(const std::vector<Figure>& figures);
// Every layer's and head's mask at full detail (one pixel per block pair) as PNG tiles of at most
// tile x tile pixels: DIR/mask_L<l>_H<h>_r<row>_c<col>.png.
std::vector<std::string> write_mask_tiles(const Capture& c, const std::string& dir, int64_t tile);
// Writes every named array as DIR/<name with '/' as '__'>.npy.
std::vector<std::string> write_npy_exports(const Capture& c, const std::string& dir);

}  // namespace hipstudio::captures
