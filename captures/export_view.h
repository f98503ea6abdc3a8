#pragma once
// One view of a capture as one file, for `hipstudio export`: the bytes of a PNG, SVG, CSV, JSON or
// .npy, chosen by what/format/layer/head. The report writes all of them; this picks one.
#include <cstdint>
#include <string>
#include <vector>

#include "captures/capture.h"

namespace hipstudio::captures {

struct ExportRequest {
  std::string what;          // mask, oracle, random, recall, locality, hit-ratio, latency, nll, metrics, trace, array
  std::string format;        // png, svg, csv, json, npy
  int64_t layer = -1;        // -1: the last layer
  int64_t head = -1;         // -1: every head where an array allows it, else head 0
  int64_t delta = -1;        // locality: a histogram of this Delta instead of the curves against Delta
  int64_t px = 512;          // mask PNG: longest side, exactly; 0: full detail (one pixel per b_k x b_k tokens)
  std::string name;          // what=array: the capture's array name, e.g. "masks/L3/hip_blocks"
  std::string style = "paper";  // figures: "paper" (light, for print, whatever the UI theme) or "dark"
  bool with_curves = false;  // locality svg with --delta: the histogram of that Delta beside the curves
};

// Throws InputError naming the valid choices when the combination does not exist or the capture
// lacks the view.
std::string export_view(const Capture& capture, const ExportRequest& request);

// "what: formats" lines for --help and error messages.
const char* export_choices();

}  // namespace hipstudio::captures
