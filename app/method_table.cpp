#include "app/method_table.h"

#include <cmath>
#include <string>

#include "engine/analysis/hip_layer_means.h"
#include "engine/formats/errors.h"
#include "viz/number_text.h"

namespace hipstudio::app {

std::vector<hip::methods::MethodChoice> method_choices(const MethodOptions& methods, const AnalysisOptions& options) {
  std::vector<hip::methods::MethodChoice> out;
  for (const ChosenMethod& c : methods.resolve(options.hip.hip)) {
    hip::methods::MethodChoice m{c.method->name, c.values};
    if (m.name == "random") m.values["random_seed"] = static_cast<double>(options.random_seed);
    try {
      hip::methods::validate_choice(m, options.hip.hip);
    } catch (const std::invalid_argument& e) {
      throw InputError("--methods " + m.name + ": " + e.what() + (m.name == "random" ? " (set with --seed)" : ""));
    }
    out.push_back(std::move(m));
  }
  return out;
}

namespace {
std::string cell(double v, const char* format) { return viz::number_text(v, format, "-"); }
}  // namespace

void print_method_table(std::FILE* out, const std::vector<MethodRun>& runs) {
  if (runs.empty()) return;
  const PairedAnalysis& first = runs.front().analysis;
  std::fprintf(out, "%-10s %10s %10s %8s %8s %8s %10s %9s %12s\n", "method", "ppl", "KL", "top-1", "recall", "mass",
               "out err", "refreshes", "prefill ms");
  std::fprintf(out, "%-10s %10s %10s %8s %8s %8s %10s %9s %12s\n", "dense", cell(first.dense.ppl, "%.4f").c_str(), "-",
               "-", "-", "-", "-", "-", cell(first.dense.latency.prefill.total(), "%.3f").c_str());
  for (const MethodRun& r : runs) {
    const PairedAnalysis& a = r.analysis;
    std::fprintf(out, "%-10s %10s %10s %8s %8s %8s %10s %9lld %12s\n", r.method.name.c_str(),
                 cell(a.hip.ppl, "%.4f").c_str(), cell(a.kl, "%.5f").c_str(), cell(a.top1_agreement, "%.4f").c_str(),
                 cell(mean_over_hip_layers(a, &HeadQuality::recall), "%.4f").c_str(),
                 cell(mean_over_hip_layers(a, &HeadQuality::mass), "%.4f").c_str(),
                 cell(mean_over_hip_layers(a, &HeadQuality::out_rel_err), "%.5f").c_str(),
                 static_cast<long long>(a.mask_refreshes), cell(a.hip.latency.prefill.total(), "%.3f").c_str());
  }
}

}  // namespace hipstudio::app
