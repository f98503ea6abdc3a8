// Latency: where the time of the paired run went (mask estimation, sparse attention, dense
// attention, the rest), per layer and in total, HiP vs dense with the speedup, and a history as the
// sliders move. The device and backend that produced the numbers are always on screen. The methods
// the Side by side panel compares show their selection time on the viewed layer, labelled a device
// timing only where the method's tensor implementation ran on the device; the others are the
// float64 CPU reference's times (a correctness reference, not a speed).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <imgui.h>

#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

// "What if" lengths of the timing: the viewed layer's own inputs, or random ones at these lengths.
constexpr int64_t kWhatIfTokens[] = {0, 8192, 32768, 131072};

class LatencyPanel final : public Panel {
 public:
  const char* id() const override { return "latency"; }
  const char* title() const override { return "Latency"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  // The device timing of one attention layer (the latency stage): CUDA-event medians with spread.
  void draw_device_timing(PanelContext& ctx) {
    const Theme& t = ctx.theme;
    AppState& s = ctx.state;
    int pick = 0;
    for (int i = 0; i < 4; ++i)
      if (kWhatIfTokens[i] == s.latency_tokens) pick = i;
    const std::string own = fmt("layer %d's own inputs", s.layer);
    const char* names[] = {own.c_str(), "8k tokens (random inputs, the model's shapes)", "32k tokens (random inputs)",
                           "128k tokens (random inputs)"};
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 20);
    if (ImGui::Combo("time attention on", &pick, names, 4)) s.latency_tokens = kWhatIfTokens[pick];
    const auto& lv = ctx.snap.latency;
    StaleScope grey(view_stale(ctx, kStageLatency));
    if (!lv || !lv->timing) {
      ImGui::TextDisabled("%s", ctx.snap.busy ? "Timing the attention on the device..." : "No device timing yet.");
      return;
    }
    const AttentionTiming& a = *lv->timing;
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%s, %lld tokens (%lld heads, %lld KV heads, d %lld, %s) on %s: CUDA events, median +- half the "
                        "interquartile range of %d repeats after %d warm-up round%s, HiP and dense interleaved",
                        a.layer >= 0 ? fmt("layer %lld", static_cast<long long>(a.layer)).c_str() : "random inputs",
                        static_cast<long long>(a.tokens), static_cast<long long>(a.heads), static_cast<long long>(a.kv_heads),
                        static_cast<long long>(a.dim), a.dtype.c_str(), a.device.c_str(), a.prefill_mask.repeats, a.warmup,
                        a.warmup == 1 ? "" : "s");
    ImGui::PopTextWrapPos();
    if (ImGui::BeginTable("##devtime", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
      ImGui::TableSetupColumn("ms, one layer", ImGuiTableColumnFlags_WidthStretch, 1.3f);
      for (const char* h : {"HiP mask", "HiP sparse", "HiP total", "dense"}) ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthStretch, 1.0f);
      ImGui::TableHeadersRow();
      auto cell = [](const TimedMs& m) {
        ImGui::TableNextColumn();
        if (std::isnan(m.median)) ImGui::TextDisabled("n/a");
        else ImGui::Text("%.3f +-%.3f", m.median, m.spread);
      };
      auto row = [&](const char* name, const TimedMs& mask, const TimedMs& sparse, double total, const TimedMs& dense) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name);
        cell(mask);
        cell(sparse);
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", total);
        cell(dense);
      };
      row("prefill", a.prefill_mask, a.prefill_sparse, a.prefill_hip(), a.prefill_dense);
      row("decode, refresh", a.decode_mask, a.decode_sparse, a.refresh_step(), a.decode_dense);
      TimedMs none;
      none.median = std::numeric_limits<double>::quiet_NaN();
      row("decode, cached", none, a.decode_sparse, a.cached_step(), a.decode_dense);
      ImGui::EndTable();
    }
    auto speed = [&](const char* what, double dense, double hip) {
      const double x = AttentionTiming::ratio(dense, hip);
      ImGui::Text("%s:", what);
      ImGui::SameLine();
      if (std::isnan(dense) || x <= 0) ImGui::TextDisabled("no dense kernel ran these shapes");
      else ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(x >= 1 ? t.good : t.bad), "HiP %.2fx dense", x);
    };
    // One line each: the panel is narrow beside the views.
    speed(fmt("Prefill vs dense %s", a.dense_prefill_backend.c_str()).c_str(), a.prefill_dense.median, a.prefill_hip());
    speed(fmt("Decode step with a mask refresh vs dense %s", a.dense_decode_backend.c_str()).c_str(), a.decode_dense.median,
          a.refresh_step());
    speed("Decode step with the cached mask", a.decode_dense.median, a.cached_step());
  }

  // Each compared method's selection of the viewed layer (the method masks stage's wall time).
  static void draw_method_timings(PanelContext& ctx) {
    const auto& mm = ctx.snap.method_masks;
    if (!mm) return;
    bool any = false;
    for (const MethodMaskView& m : mm->methods) any |= m.masks && !m.reused;
    if (!any) return;
    StaleScope grey(view_stale(ctx, kStageMethodMasks));
    ImGui::Text("Selection of layer %lld's mask by the compared methods:", static_cast<long long>(mm->layer));
    if (!ImGui::BeginTable("##method_times", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
    ImGui::TableSetupColumn("method", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("ms", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("timing", ImGuiTableColumnFlags_WidthStretch, 3.0f);
    ImGui::TableHeadersRow();
    for (const MethodMaskView& m : mm->methods) {
      if (!m.masks) continue;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m.method.name.c_str());
      ImGui::TableNextColumn();
      if (m.reused) ImGui::TextDisabled("n/a");
      else ImGui::Text("%.2f", m.seconds * 1e3);
      ImGui::TableNextColumn();
      if (m.reused) ImGui::TextDisabled("the layer views' own mask, not timed here");
      else if (m.device_timing) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ctx.theme.good), "device timing (%s)", m.source.c_str());
      else ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ctx.theme.warn), "reference timing (float64 CPU)");
    }
    ImGui::EndTable();
  }

  void draw(PanelContext& ctx) override {
    const Theme& t = ctx.theme;
    const auto& a = ctx.snap.analysis;
    if (!a || a->model.synthetic) {
      empty_state("Latency appears after a paired run on a model.", t);
      return;
    }
    const PairedAnalysis& pa = *a->analysis;
    StaleScope grey(view_stale(ctx, kStageDecode));  // the decode half's result carries both halves' timings
    const bool cpu = !a->model.on_cuda;
    ImGui::PushTextWrapPos(0);
    if (cpu) {
      // The CPU side runs HiP as the float64 reference and dense as LibTorch: comparing the two says
      // nothing about HiP's speed, so no speedup is shown.
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.warn),
                         "Measured on %s: HiP runs the float64 CPU reference, a correctness reference and not a speed "
                         "measurement, so no speedup is shown. Run on CUDA for HiP's kernels.", a->model.device.c_str());
    } else {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.good), "Measured on %s", a->model.device.c_str());
      ImGui::PopTextWrapPos();
      draw_device_timing(ctx);
      ImGui::PushTextWrapPos(0);
      ImGui::Separator();
    }
    ImGui::TextDisabled("Wall-clock of one paired run (the analysis's instrumented run, not a speed benchmark), %lld prompt tokens; decode = mean per step over %zu steps",
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
    ImGui::Text("Total prefill: dense %.2f ms, HiP %.2f ms", pa.dense.latency.prefill.total(), pa.hip.latency.prefill.total());
    if (!cpu) {
      ImGui::SameLine();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ps >= 1 ? t.good : t.bad), "-> speedup %.2fx", ps);
    }
    ImGui::Text("Decode step:   dense %.2f ms, HiP %.2f ms", pa.dense.latency.decode_step.total(),
                pa.hip.latency.decode_step.total());
    if (!cpu) {
      ImGui::SameLine();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ds >= 1 ? t.good : t.bad), "-> speedup %.2fx", ds);
    }

    draw_method_timings(ctx);

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
      // Every paired run since the app started (the worker records them, panel open or not).
      static const std::vector<LatencySample> kNone;
      const std::vector<LatencySample>& history = ctx.snap.latency_history ? *ctx.snap.latency_history : kNone;
      // A decode-only re-run measured no prefill: it keeps its place on the axis but gets no point.
      std::vector<double> xs, yh, yd;
      double hmax = 1e-6;
      for (size_t i = 0; i < history.size(); ++i) {
        if (!history[i].new_prefill) continue;
        xs.push_back(static_cast<double>(i + 1));
        yh.push_back(history[i].hip_ms);
        yd.push_back(history[i].dense_ms);
        hmax = std::max({hmax, history[i].hip_ms, history[i].dense_ms});
      }
      ImGui::BeginGroup();
      const std::string runs = std::to_string(history.size()) + (history.size() == 1 ? " run" : " runs") + ", newest right";
      PlotArea p = begin_plot("##lat_hist", ImVec2(0, h - ImGui::GetFrameHeightWithSpacing()), 0.5,
                              static_cast<double>(history.size()) + 0.5, 0, hmax * 1.1, runs.c_str(), "prefill ms", t);
      plot_line(p, xs, yh, t.hip);
      plot_points(p, xs, yh, t.hip);
      plot_line(p, xs, yd, t.dense);
      plot_points(p, xs, yd, t.dense);
      end_plot();
      if (p.hovered && !history.empty()) {
        const auto idx = static_cast<size_t>(std::clamp(static_cast<int>(p.x_of(p.mouse.x) + 0.5) - 1, 0,
                                                        static_cast<int>(history.size()) - 1));
        const LatencySample& smp = history[idx];
        const std::string prefill =
            smp.new_prefill ? fmt("prefill: HiP %.2f ms (mask %.2f, sparse %.2f), dense %.2f ms", smp.hip_ms, smp.mask_ms,
                                  smp.sparse_ms, smp.dense_ms)
                            : std::string("decode steps only (r_m or the step count changed): the prefill was not re-run");
        ImGui::SetTooltip("run %zu: k = %lld, r_m = %lld, %lld decode steps\n%s\ndecode step: HiP %.2f ms, dense %.2f ms",
                          idx + 1, static_cast<long long>(smp.k), static_cast<long long>(smp.refresh_every),
                          static_cast<long long>(smp.decode_steps), prefill.c_str(), smp.hip_step_ms, smp.dense_step_ms);
      }
      legend_item(t.hip, "HiP prefill");
      legend_item(t.dense, "dense prefill");
      ImGui::NewLine();
      ImGui::EndGroup();
    }
    legend_item(cm, "mask estimation");
    legend_item(cs, "sparse attention");
    legend_item(cd, "dense attention");
    legend_item(co, "other");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Everything outside attention: projections, MLP, norms, sampling");
  }
};

}  // namespace

std::unique_ptr<Panel> make_latency_panel() { return std::make_unique<LatencyPanel>(); }

}  // namespace hipstudio::gui
