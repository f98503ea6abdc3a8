#pragma once
// The comparison of the methods a capture holds (format 3, more than one method): a table with one
// row per method and per-layer figures with one curve per method, for the report and the figure
// exports. The numbers are each method's CapturedMethod, averaged as every summary averages them.
#include <string>
#include <vector>

#include "captures/capture.h"
#include "viz/figure.h"

namespace hipstudio::captures {

// One method's row: its name and the means over the layers HiP replaces (hip_layer_means.h).
struct MethodRow {
  std::string name;
  double recall = 0, mass = 0, out_rel_err = 0, kl = 0, top1_agreement = 0, ppl = 0;
};
std::vector<MethodRow> method_rows(const Capture& c);

// <table> of method_rows: method, recall, mass, output error, KL, top-1, perplexity.
std::string method_table_html(const Capture& c);

// Per layer (x) the mean over heads of `field` (y), one curve per method (non-finite layers, such
// as windowed ones, left as gaps).
std::string svg_method_layers(const Capture& c, double HeadQuality::*field, const std::string& title, const std::string& y_label,
                              const viz::FigureStyle& style, const std::string& context);

}  // namespace hipstudio::captures
