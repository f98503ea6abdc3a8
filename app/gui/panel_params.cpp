// Sidebar: HiP's knobs with inline validation, and which layer / head / query block to look at.
// Invalid combinations show the broken rule and never reach the worker.
#include <algorithm>
#include <string>

#include <imgui.h>

#include "app/gui/capture_view.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

using hip::HipField;

// The slider of field `f` (its label, help and range from the field table; `hi` >= 0 replaces the
// table's top where the model or prompt sets it), framed red when the broken rule names the field;
// returns true when changed.
bool knob(HipField f, int* v, const KnobBreak& verdict, uint32_t bad_color, int hi = -1, bool log = false) {
  const hip::HipParamField& d = hip::hip_param_field(f);
  const bool bad = verdict.names(f);
  if (bad) {
    ImGui::PushStyleColor(ImGuiCol_Border, ImGui::ColorConvertU32ToFloat4(bad_color));
    ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
  }
  const bool changed = ImGui::SliderInt(d.slider_label, v, static_cast<int>(d.slider_lo), hi >= 0 ? hi : static_cast<int>(d.slider_hi),
                                        "%d", log ? ImGuiSliderFlags_Logarithmic : 0);
  if (bad) {
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
  }
  if (ImGui::IsItemHovered()) side_tooltip("%s\n(Ctrl+click to type a value)", d.slider_help);
  return changed;
}

// A real-valued field's slider with its tooltip.
void real_knob(HipField f, float* v) {
  const hip::HipParamField& d = hip::hip_param_field(f);
  ImGui::SliderFloat(d.slider_label, v, static_cast<float>(d.slider_lo), static_cast<float>(d.slider_hi), "%.2f");
  if (ImGui::IsItemHovered()) side_tooltip("%s", d.slider_help);
}

class ParamsPanel final : public Panel {
 public:
  const char* id() const override { return "params"; }
  const char* title() const override { return "HiP parameters"; }
  PaneSlot default_slot() const override { return PaneSlot::Sidebar; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    if (s.capture) {
      draw_capture_params(ctx);
      return;
    }
    HipKnobs& k = s.knobs;
    const ModelInfo* info = ctx.snap.model.get();
    const int tokens = ctx.snap.analysis ? static_cast<int>(ctx.snap.analysis->tokens()) : 256;
    const int layers = info ? static_cast<int>(info->full_attention_layers) : 6;  // l_d's bound

    const KnobBreak& rule = verdict_;  // last frame's verdict, for the red frames
    const uint32_t bad = ctx.theme.bad;
    // Two knobs a row (short labels, the meaning in each tooltip): at 1280x720 the whole sidebar
    // fits without scrolling.
    const float label_w = ImGui::CalcTextSize("decode").x + ImGui::GetStyle().ItemInnerSpacing.x;
    const float half = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) / 2;
    ImGui::PushItemWidth(half - label_w);
    auto next = [] { ImGui::SameLine(); };
    // k moves in steps of b_k (the rule every selection keeps), so a drag or a typed value never
    // lands on a refused one; a typed value that was not a multiple says what it became.
    if (knob(HipField::kK, &k.k, rule, bad, std::max(64, tokens * 2), true) && k.b_k > 0) {
      const int typed = k.k;
      k.k = std::max(k.b_k, (k.k + k.b_k / 2) / k.b_k * k.b_k);
      k_note_ = typed != k.k && ImGui::GetIO().WantTextInput ? fmt("k %d snapped to %d, a multiple of b_k %d", typed, k.k, k.b_k) : "";
    }
    next();
    knob(HipField::kBq, &k.b_q, rule, bad);
    knob(HipField::kBk, &k.b_k, rule, bad);
    next();
    knob(HipField::kBsq, &k.b_sq, rule, bad);
    knob(HipField::kBsk, &k.b_sk, rule, bad);
    next();
    knob(HipField::kSink, &k.sink, rule, bad);
    knob(HipField::kWindow, &k.window, rule, bad);
    next();
    real_knob(HipField::kRho, &k.rho);
    knob(HipField::kDenseLayers, &k.l_d, rule, bad, layers);
    next();
    knob(HipField::kRefreshEvery, &k.r_m, rule, bad);
    // Decode steps fit in the model's context after the prompt.
    const int room = info && ctx.snap.analysis ? static_cast<int>(info->max_seq_len - ctx.snap.analysis->tokens()) : 64;
    knob(HipField::kDecodeSteps, &k.decode_steps, rule, bad, std::clamp(room, 0, static_cast<int>(kGuiDecodeRoom)));
    next();
    real_knob(HipField::kCacheFactor, &k.cache_factor);
    ImGui::PopItemWidth();

    verdict_ = knob_break(k, info ? info->full_attention_layers : 0);
    s.invalid = verdict_.message;
    if (!s.invalid.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.bad));
      ImGui::TextWrapped("Not run: %s", s.invalid.c_str());
      ImGui::PopStyleColor();
    } else {
      s.applied = k;
    }
    if (ImGui::SmallButton("Reset to the defaults")) s.knobs = HipKnobs{};
    if (ImGui::IsItemHovered())
      side_tooltip("k 32, b_q 8, b_k 2, b_sq 1, b_sk 1, sink 2, window 4, l_d 1, r_m 4: the paper's settings scaled\n"
                        "to stories15M's 256-token context (the paper's k = 512 would select everything).");
    ImGui::SameLine();
    ImGui::TextDisabled("Kb = %d blocks", k.b_k > 0 ? k.k / k.b_k : 0);
    if (ctx.snap.analysis && k.k >= tokens) {
      ImGui::SameLine();
      ImGui::TextDisabled("k >= T: dense");
      if (ImGui::IsItemHovered()) side_tooltip("k %d >= T = %d tokens: HiP keeps every key, as dense attention does.", k.k, tokens);
    }
    if (!k_note_.empty()) ImGui::TextDisabled("%s", k_note_.c_str());
  }

  // Read-only: the capture's parameters as text and as disabled sliders; the view selection stays live.
  static void draw_capture_params(PanelContext& ctx) {
    const OpenCapture& c = *ctx.state.capture;
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.warn));
    ImGui::TextWrapped("Capture parameters (read-only):");
    ImGui::PopStyleColor();
    for (const std::string& line : c.params) ImGui::TextWrapped("%s", line.c_str());
    HipKnobs k = c.knobs;  // a copy: the sliders show the values and change nothing
    ImGui::BeginDisabled();
    const float w = ImGui::GetContentRegionAvail().x * 0.62f;
    auto show = [&](const char* label, int* v) {
      ImGui::SetNextItemWidth(w);
      ImGui::SliderInt(label, v, 0, std::max(1, *v * 2));
    };
    show("k (top-k tokens)", &k.k);
    show("b_q (query block)", &k.b_q);
    show("b_k (key block)", &k.b_k);
    show("sink", &k.sink);
    show("window", &k.window);
    show("l_d (dense layers)", &k.l_d);
    ImGui::EndDisabled();
    ImGui::TextDisabled("File > Close capture to edit parameters and run.");  }

 private:
  std::string k_note_;  // what a typed k was snapped to, until the next k change
  KnobBreak verdict_;   // the last frame's rule check: its fields are framed red
};

}  // namespace

std::unique_ptr<Panel> make_params_panel() { return std::make_unique<ParamsPanel>(); }

}  // namespace hipstudio::gui
