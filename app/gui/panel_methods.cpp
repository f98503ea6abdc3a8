// The Methods panel: the selection methods of the registry (kernels/methods/selection_method.h)
// compared as the model's sparse side at the sidebar's budget, run on the worker (the methods
// stage: progress, Cancel) by the same computation as `hipstudio analyze --methods`
// (engine/analysis/method_comparison.h): one row per method (perplexity, KL and top-1 against the
// dense side, recall, mass and output error against the oracle, prefill time), a per-layer table
// of one metric for every method, and a plot of that metric over the layers.
#include <cmath>
#include <cstdio>
#include <map>

#include <imgui.h>

#include "app/common/sweep_outputs.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"
#include "app/gui/worker.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::gui {

namespace {
namespace hm = hip::methods;

uint32_t im_color(uint32_t rgb) { return IM_COL32((rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff, 255); }

enum class LayerMetric { kRecall, kMass, kOutErr };
const char* metric_label(LayerMetric m) {
  return m == LayerMetric::kRecall ? "recall vs oracle" : m == LayerMetric::kMass ? "attention mass" : "output rel. error";
}
const std::vector<double>& layer_values(const MethodRow& r, LayerMetric m) {
  return m == LayerMetric::kRecall ? r.layer_recall : m == LayerMetric::kMass ? r.layer_mass : r.layer_out_rel_err;
}

class MethodsPanel final : public Panel {
 public:
  MethodsPanel() {
    for (const hm::SelectionMethod* m : hm::selection_methods()) {
      checked_[m->name] = m->name == "hip" || m->name == "streaming" || m->name == "quest" || m->name == "vslash";
      for (const hm::MethodParam& p : m->params) given_[m->name][p.name] = p.fallback;
    }
  }
  const char* id() const override { return "methods"; }
  const char* title() const override { return "Methods"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    if (s.capture) {
      empty_state("A comparison runs the model: close the capture (File > Close capture) to compare methods.", t);
      return;
    }
    controls(ctx);
    const auto& mv = ctx.snap.methods;
    const bool running = ctx.snap.busy && ctx.snap.running_stage == kStageMethods;
    if (running) {
      ImGui::ProgressBar(static_cast<float>(ctx.snap.fraction), ImVec2(-ImGui::GetFontSize() * 8, 0), ctx.snap.what.c_str());
      ImGui::SameLine();
      if (ImGui::Button("Cancel##methods")) ctx.worker.cancel();
    }
    const std::string& err = ctx.snap.error[kStageMethods];
    if (!err.empty() && s.methods_id != 0)
      warn_text(err == "cancelled" ? "The comparison was cancelled: press Run to run it again." : "The comparison failed: " + err, t);
    if (!mv) {
      if (!running) empty_state("Check the methods to compare, then press Run.", t);
      return;
    }
    const bool stale = ctx.snap.stale[kStageMethods] && !running;
    StaleScope grey(stale);
    if (stale && err.empty()) warn_text("The comparison is of earlier settings: press Run for the current ones.", t);
    ImGui::TextWrapped("T = %lld tokens; each method as the sparse side at the sidebar's budget, the dense side run once.%s",
                       static_cast<long long>(mv->prompt_tokens),
                       mv->timed ? "" : " Times are of the CPU's float64 reference, not speeds.");
    summary(*mv);
    layers(*mv, t);
  }

 private:
  // The registry's methods as check boxes, each checked method's parameters under it (ranges and
  // help from the registry), and Run once every value passes the method's rules.
  void controls(PanelContext& ctx) {
    AppState& s = ctx.state;
    // A comparison asked for elsewhere (the self-test, restored settings) shows as the boxes it checked.
    if (s.methods_id != asked_id_) {
      asked_id_ = s.methods_id;
      if (!s.methods.empty()) {
        for (auto& [name, on] : checked_) on = false;
        for (const hm::MethodChoice& m : s.methods) {
          checked_[m.name] = true;
          for (const auto& [param, value] : m.values) given_[m.name][param] = value;
        }
      }
    }
    const hip::HipParams p = to_hip_params(s.applied);
    std::vector<hm::MethodChoice> chosen;
    std::string problem;
    for (const hm::SelectionMethod* m : hm::selection_methods()) {
      ImGui::Checkbox((m->name + "##methods_check").c_str(), &checked_[m->name]);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n%s", m->citation.c_str(), m->rule.c_str());
      ImGui::SameLine();
    }
    ImGui::NewLine();
    for (const hm::SelectionMethod* m : hm::selection_methods()) {
      if (!checked_[m->name]) continue;
      for (const hm::MethodParam& param : m->params) {
        double& v = given_[m->name][param.name];
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
        const std::string label = m->name + ": " + param.name + "##methods_param";
        if (param.kind == hm::MethodParamKind::kInteger) {
          int i = static_cast<int>(v);
          if (ImGui::InputInt(label.c_str(), &i)) v = i;
        } else {
          ImGui::InputDouble(label.c_str(), &v, 0.05, 0.1, "%.3f");
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s (%g to %g)", param.help.c_str(), param.lo, param.hi);
      }
      try {
        chosen.push_back({m->name, hm::resolve_values(*m, given_[m->name], p)});
      } catch (const std::invalid_argument& e) {
        if (problem.empty()) problem = m->name + ": " + e.what();
      }
    }
    if (chosen.empty() && problem.empty()) problem = "check at least one method";
    const bool can_run = problem.empty() && s.invalid.empty() && ctx.snap.model;
    ImGui::BeginDisabled(!can_run);
    if (ImGui::Button("Run##methods")) {
      s.methods = chosen;
      asked_id_ = ++s.methods_id;
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    // The line beside Run is always there (empty when all is well), so an error never moves the controls.
    if (!problem.empty()) warn_text(problem, ctx.theme);
    else if (!s.invalid.empty()) warn_text("The sidebar's settings are refused: " + s.invalid, ctx.theme);
    else ImGui::TextDisabled("%zu methods; k, b_k, sink, window, l_d and r_m as the sidebar holds them.", chosen.size());
  }

  static void cell(double v, const char* format) {
    ImGui::TableNextColumn();
    if (std::isfinite(v)) ImGui::Text(format, v);
    else ImGui::TextDisabled("n/a");
  }

  static void summary(const MethodsView& mv) {
    // Columns share the panel's width (stretched), so the last one is never cut off.
    const char* heads[] = {"method", "ppl", "KL", "top-1", "recall", "mass", "out err", "refr.", "prefill ms"};
    if (!ImGui::BeginTable("##methods_rows", 9, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchSame))
      return;
    for (const char* h : heads) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("dense");
    cell(mv.dense_ppl, "%.4f");
    for (int i = 0; i < 6; ++i) cell(NAN, "");
    cell(mv.dense_prefill_ms, "%.2f");
    for (const MethodRow& r : mv.rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.name.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.title.c_str());
      cell(r.ppl, "%.4f");
      cell(r.kl, "%.5f");
      cell(r.top1, "%.4f");
      cell(r.recall, "%.4f");
      cell(r.mass, "%.4f");
      cell(r.out_rel_err, "%.5f");
      cell(static_cast<double>(r.mask_refreshes), "%.0f");
      cell(r.prefill_ms, "%.2f");
    }
    ImGui::EndTable();
  }

  // One metric per layer for every method: the plot (layer on the x axis, one line per method, the
  // sweep's method colours) and the table under it.
  void layers(const MethodsView& mv, const Theme& t) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
    if (ImGui::BeginCombo("per layer##methods", metric_label(metric_))) {
      for (LayerMetric m : {LayerMetric::kRecall, LayerMetric::kMass, LayerMetric::kOutErr})
        if (ImGui::Selectable(metric_label(m), m == metric_)) metric_ = m;
      ImGui::EndCombo();
    }
    if (mv.rows.empty()) return;
    const size_t n_layers = mv.rows.front().layer_recall.size();
    double y0 = INFINITY, y1 = -INFINITY;
    for (const MethodRow& r : mv.rows)
      for (double v : layer_values(r, metric_))
        if (std::isfinite(v)) y0 = std::min(y0, v), y1 = std::max(y1, v);
    if (metric_ != LayerMetric::kOutErr) y0 = 0, y1 = 1.05;  // room above 1: the oracle's recall is 1
    if (!(y1 > y0)) y0 = std::isfinite(y0) ? y0 - 0.5 : 0, y1 = std::isfinite(y1) ? y1 + 0.5 : 1;
    const float w = ImGui::GetContentRegionAvail().x;
    const float h = std::max(ImGui::GetFontSize() * 10, std::min(w * 0.4f, ImGui::GetContentRegionAvail().y * 0.4f));
    const PlotArea p = begin_plot("##methods_plot", ImVec2(w, h), -0.5, static_cast<double>(n_layers) - 0.5, y0, y1, "layer",
                                  metric_label(metric_), t);
    for (size_t m = 0; m < mv.rows.size(); ++m) {
      std::vector<double> xs, ys;
      const std::vector<double>& v = layer_values(mv.rows[m], metric_);
      for (size_t l = 0; l < v.size(); ++l)
        if (std::isfinite(v[l])) xs.push_back(static_cast<double>(l)), ys.push_back(v[l]);
      const uint32_t c = im_color(app::sweep_method_color(m));
      plot_line(p, xs, ys, c);
      plot_points(p, xs, ys, c, 4.0f);
    }
    end_plot();
    for (size_t m = 0; m < mv.rows.size(); ++m) legend_item(im_color(app::sweep_method_color(m)), mv.rows[m].name.c_str());
    ImGui::NewLine();
    const int cols = 1 + static_cast<int>(mv.rows.size());
    if (!ImGui::BeginTable("##methods_layers", cols, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit))
      return;
    const float cw = ImGui::GetFontSize() * 5.0f;
    ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_WidthFixed, cw);
    for (const MethodRow& r : mv.rows) ImGui::TableSetupColumn(r.name.c_str(), ImGuiTableColumnFlags_WidthFixed, cw);
    ImGui::TableHeadersRow();
    for (size_t l = 0; l < n_layers; ++l) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu%s", l, mv.rows.front().layer_dense[l] ? " dense" : "");
      for (const MethodRow& r : mv.rows) cell(layer_values(r, metric_)[l], metric_ == LayerMetric::kOutErr ? "%.5f" : "%.4f");
    }
    ImGui::EndTable();
  }

  std::map<std::string, bool> checked_;
  std::map<std::string, hm::MethodValues> given_;
  LayerMetric metric_ = LayerMetric::kRecall;
  uint64_t asked_id_ = 0;  // the AppState::methods_id the boxes show
};

}  // namespace

std::unique_ptr<Panel> make_methods_panel() { return std::make_unique<MethodsPanel>(); }

}  // namespace hipstudio::gui
