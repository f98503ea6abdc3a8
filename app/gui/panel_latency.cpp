// Latency: where the time of the paired run went (mask estimation, sparse attention, dense
// attention, the rest), per layer and in total, HiP vs dense with the speedup, and a history as the
// sliders move. The device and backend that produced the numbers are always on screen.
#include <algorithm>

#include <imgui.h>

#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class LatencyPanel final : public Panel {
 public:
  const char* id() const override { return "latency"; }
  const char* title() const override { return "Latency"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const auto& a = ctx.snap.analysis;
    if (!a || a->model.synthetic) {
      empty_state("Latency appears after a paired run on a model.", t);
      return;
    }
    const PairedAnalysis& pa = *a->analysis;
    // History: one sample per new analysis result.
    if (a != last_) {
      last_ = a;
      LatencySample smp;
      smp.hip_ms = pa.hip.latency.prefill.total();
      smp.dense_ms = pa.dense.latency.prefill.total();
      smp.mask_ms = pa.hip.latency.prefill.mask;
      smp.sparse_ms = pa.hip.latency.prefill.sparse;
      smp.k = static_cast<int>(pa.options.hip.hip.k);
      s.latency_history.push_back(smp);
      while (s.latency_history.size() > 64) s.latency_history.pop_front();
    }
    StaleScope grey(view_stale(ctx, kStageAnalysis));
    const bool cpu = !a->model.on_cuda;
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(cpu ? t.warn : t.good), "Measured on %s%s", a->model.device.c_str(),
                       cpu ? "  (CPU numbers: HiP runs the float64 CPU reference, dense runs LibTorch)" : "");
    ImGui::TextDisabled("Wall-clock of one paired run, %lld prompt tokens; decode = mean per step over %zu steps",
                        static_cast<long long>(a->tokens()), pa.decode.size());
    ImGui::PopTextWrapPos();
    if (ImGui::BeginTable("##lat", 6, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
      ImGui::TableSetupColumn("milliseconds", ImGuiTableColumnFlags_WidthStretch, 2.2f);
      for (const char* h : {"mask", "sparse", "dense", "other", "total"}) ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthStretch, 1.0f);
      ImGui::TableHeadersRow();
      auto row = [&](const char* name, const ComponentMs& c) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name);
        for (double v : {c.mask, c.sparse, c.dense, c.other, c.total()}) {
          ImGui::TableNextColumn();
          ImGui::Text("%.2f", v);
        }
      };
      row("prefill, HiP", pa.hip.latency.prefill);
      row("prefill, dense", pa.dense.latency.prefill);
      row("decode step, HiP", pa.hip.latency.decode_step);
      row("decode step, dense", pa.dense.latency.decode_step);
      ImGui::EndTable();
    }
    auto speedup = [](double dense, double hip) { return hip > 0 ? dense / hip : 0.0; };
    const double ps = speedup(pa.dense.latency.prefill.total(), pa.hip.latency.prefill.total());
    const double ds = speedup(pa.dense.latency.decode_step.total(), pa.hip.latency.decode_step.total());
    ImGui::Text("Total prefill: dense %.2f ms, HiP %.2f ms -> speedup", pa.dense.latency.prefill.total(), pa.hip.latency.prefill.total());
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ps >= 1 ? t.good : t.bad), "%.2fx", ps);
    ImGui::Text("Decode step:   dense %.2f ms, HiP %.2f ms -> speedup", pa.dense.latency.decode_step.total(),
                pa.hip.latency.decode_step.total());
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ds >= 1 ? t.good : t.bad), "%.2fx", ds);

    // Per-layer stacked bars (prefill): HiP (left) and dense (right) per layer.
    const auto& hl = pa.hip.latency.prefill_layers;
    const auto& dlay = pa.dense.latency.prefill_layers;
    const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.55f;
    const float h = std::max(ImGui::GetFontSize() * 10, ImGui::GetContentRegionAvail().y - ImGui::GetFontSize() * 2);
    double ymax = 1e-6;
    for (size_t l = 0; l < hl.size(); ++l) ymax = std::max({ymax, hl[l].total(), l < dlay.size() ? dlay[l].total() : 0.0});
    const uint32_t cm = t.hip, cs = t.mask.miss, cd = t.dense, co = t.text_dim;
    {
      PlotArea p = begin_plot("##lat_layers", ImVec2(w, h), -0.5, static_cast<double>(hl.size()) - 0.5, 0, ymax * 1.1,
                              "layer (left bar HiP, right bar dense)", "prefill ms", t);
      ImDrawList* dl = ImGui::GetWindowDrawList();
      for (size_t l = 0; l < hl.size(); ++l) {
        auto stack = [&](double x0, double x1, const ComponentMs& c) {
          double y = 0;
          const double parts[] = {c.mask, c.sparse, c.dense, c.other};
          const uint32_t cols[] = {cm, cs, cd, co};
          for (int i = 0; i < 4; ++i) {
            const ImVec2 a0 = p.at(x0, y + parts[i]), a1 = p.at(x1, y);
            dl->AddRectFilled(a0, a1, cols[i]);
            y += parts[i];
          }
        };
        const double x = static_cast<double>(l);
        stack(x - 0.38, x - 0.02, hl[l]);
        if (l < dlay.size()) stack(x + 0.02, x + 0.38, dlay[l]);
      }
      end_plot();
    }
    ImGui::SameLine();
    {
      std::vector<double> xs, yh, yd;
      double hmax = 1e-6;
      int i = 0;
      for (const auto& smp : s.latency_history) {
        xs.push_back(i++);
        yh.push_back(smp.hip_ms);
        yd.push_back(smp.dense_ms);
        hmax = std::max({hmax, smp.hip_ms, smp.dense_ms});
      }
      PlotArea p = begin_plot("##lat_hist", ImVec2(0, h), -0.5, static_cast<double>(xs.size()) - 0.5, 0, hmax * 1.1,
                              "paired run (newest right)", "prefill ms", t);
      plot_line(p, xs, yh, t.hip);
      plot_points(p, xs, yh, t.hip);
      plot_line(p, xs, yd, t.dense);
      end_plot();
      if (p.hovered && !s.latency_history.empty()) {
        const auto idx = static_cast<size_t>(std::clamp(static_cast<int>(p.x_of(p.mouse.x) + 0.5), 0,
                                                        static_cast<int>(s.latency_history.size()) - 1));
        const LatencySample& smp = s.latency_history[idx];
        ImGui::SetTooltip("run %zu: k = %d\nHiP %.2f ms (mask %.2f, sparse %.2f)\ndense %.2f ms", idx, smp.k, smp.hip_ms,
                          smp.mask_ms, smp.sparse_ms, smp.dense_ms);
      }
    }
    legend_item(cm, "mask estimation");
    legend_item(cs, "sparse attention");
    legend_item(cd, "dense attention");
    legend_item(co, "other");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Everything outside attention: projections, MLP, norms, sampling");
  }

 private:
  std::shared_ptr<const AnalysisView> last_;
};

}  // namespace

std::unique_ptr<Panel> make_latency_panel() { return std::make_unique<LatencyPanel>(); }

}  // namespace hipstudio::gui
