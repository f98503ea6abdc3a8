#include "engine/analysis/method_comparison.h"

#include <stdexcept>

#include "engine/backends/hip_attention.h"
#include "engine/runtime/run_cancelled.h"

namespace hipstudio {

std::vector<MethodRun> run_method_comparison(std::shared_ptr<const Model> model, const std::string& prompt,
                                             const AnalysisOptions& base,
                                             const std::vector<hip::methods::MethodChoice>& methods,
                                             const AnalysisProgress& progress, bool later_inputs) {
  if (methods.empty()) throw std::invalid_argument("a method comparison needs at least one method");
  std::vector<AnalysisOptions> points;
  for (const hip::methods::MethodChoice& m : methods) {
    AnalysisOptions o = base;
    o.hip.method = m;
    o.random_scores = false;  // a method's entry reports its own side's numbers only
    validate_hip_model_params(o.hip);  // every method checked before the first prefill
    points.push_back(std::move(o));
  }
  const double n = static_cast<double>(points.size());
  std::vector<MethodRun> runs;
  std::unique_ptr<PairedPrefill> prefill;
  for (size_t i = 0; i < points.size(); ++i) {
    const AnalysisOptions& o = points[i];
    const std::string name = methods[i].name;
    // Method i owns the fraction [i / n, (i + 1) / n) of the progress; the first also holds the dense prefill.
    const auto report = [&](double f, const std::string& what) {
      if (progress && !progress((static_cast<double>(i) + f) / n,
                                name + " (" + std::to_string(i + 1) + " of " + std::to_string(points.size()) + "): " + what))
        throw RunCancelled();
      return true;
    };
    const auto prefill_part = [&](double f, const std::string& w) { return report(0.8 * f, w); };
    if (!prefill)
      prefill = PairedPrefill::run(model, prompt, o, o.decode_steps, prefill_part);
    else
      prefill->rerun_hip(o, prefill_part);
    const bool last = i + 1 == points.size();
    const auto decode_part = [&](double f, const std::string& w) { return report(0.8 + 0.2 * f, w); };
    runs.push_back({methods[i], last ? prefill->finish(o.decode_steps, o.hip.refresh_every, decode_part)
                                     : prefill->decode(o.decode_steps, o.hip.refresh_every, decode_part)});
    if (i > 0 && !later_inputs) runs.back().analysis.inputs.clear();
  }
  if (progress && !progress(1.0, "methods done")) throw RunCancelled();
  return runs;
}

}  // namespace hipstudio
