// Sidebar: HiP's knobs with inline validation, and which layer / head / query block to look at.
// Invalid combinations show the broken rule and never reach the worker.
#include <algorithm>
#include <cctype>
#include <string>

#include <imgui.h>

#include "app/gui/capture_view.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

// Whether the broken rule names this knob: "b_k (3)" names b_k, not k.
bool mentions(const std::string& rule, const char* name) {
  const std::string key = std::string(name) + " (";
  for (size_t at = rule.find(key); at != std::string::npos; at = rule.find(key, at + 1))
    if (at == 0 || !(std::isalnum(static_cast<unsigned char>(rule[at - 1])) || rule[at - 1] == '_')) return true;
  return false;
}

// A slider with a tooltip, framed red when the broken rule names it; returns true when changed.
bool knob(const char* label, const char* name, int* v, int lo, int hi, const char* help, const std::string& rule,
          uint32_t bad_color, bool log = false) {
  const bool bad = !rule.empty() && mentions(rule, name);
  if (bad) {
    ImGui::PushStyleColor(ImGuiCol_Border, ImGui::ColorConvertU32ToFloat4(bad_color));
    ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
  }
  const bool changed = ImGui::SliderInt(label, v, lo, hi, "%d", log ? ImGuiSliderFlags_Logarithmic : 0);
  if (bad) {
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
  }
  if (ImGui::IsItemHovered() && help) side_tooltip("%s\n(Ctrl+click to type a value)", help);
  return changed;
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
    const int layers = info ? static_cast<int>(info->n_layers) : 6;

    const std::string& rule = s.invalid;  // last frame's verdict, for the red frames
    const uint32_t bad = ctx.theme.bad;
    // Two knobs a row (short labels, the meaning in each tooltip): at 1280x720 the whole sidebar
    // fits without scrolling.
    const float label_w = ImGui::CalcTextSize("decode").x + ImGui::GetStyle().ItemInnerSpacing.x;
    const float half = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) / 2;
    ImGui::PushItemWidth(half - label_w);
    auto next = [] { ImGui::SameLine(); };
    // k moves in steps of b_k (the rule every selection keeps), so a drag or a typed value never
    // lands on a refused one; a typed value that was not a multiple says what it became.
    if (knob("k", "k", &k.k, 1, std::max(64, tokens * 2), "k: top-k budget in tokens; k / b_k key blocks per query block.", rule, bad,
             true) &&
        k.b_k > 0) {
      const int typed = k.k;
      k.k = std::max(k.b_k, (k.k + k.b_k / 2) / k.b_k * k.b_k);
      k_note_ = typed != k.k && ImGui::GetIO().WantTextInput ? fmt("k %d snapped to %d, a multiple of b_k %d", typed, k.k, k.b_k) : "";
    }
    next();
    knob("b_q", "b_q", &k.b_q, 1, 64, "b_q: query rows that share one mask (query block).", rule, bad);
    knob("b_k", "b_k", &k.b_k, 1, 32, "b_k: key block size, the unit the search selects.", rule, bad);
    next();
    knob("b_sq", "b_sq", &k.b_sq, 1, 16, "b_sq: stride over the query rows when scoring a branch.", rule, bad);
    knob("b_sk", "b_sk", &k.b_sk, 1, 16, "b_sk: stride over the keys of a representative block.", rule, bad);
    next();
    knob("sink", "sink", &k.sink, 0, 64, "sink: keys [0, sink) are always attended (StreamingLLM sink).", rule, bad);
    knob("window", "window", &k.window, 0, 128, "window: the most recent keys attended densely (sliding window).", rule, bad);
    next();
    ImGui::SliderFloat("repr", &k.rho, 0.0f, 1.0f, "%.2f");
    if (ImGui::IsItemHovered()) side_tooltip("repr: representative key block of a branch: 0 first, 0.5 center, 1 last.");
    knob("l_d", "l_d", &k.l_d, 0, layers, "l_d: the first l_d layers stay dense.", rule, bad);
    next();
    knob("r_m", "r_m", &k.r_m, 1, 32, "r_m: decode steps per mask re-estimation.", rule, bad);
    // Decode steps fit in the model's context after the prompt.
    const int room = info && ctx.snap.analysis ? static_cast<int>(info->max_seq_len - ctx.snap.analysis->tokens()) : 64;
    knob("decode", "decode steps", &k.decode_steps, 0, std::clamp(room, 0, static_cast<int>(kGuiDecodeRoom)),
         "decode: greedy decode steps after the prompt (KV cache view); at most the context left after the prompt.", rule, bad);
    next();
    ImGui::SliderFloat("c", &k.cache_factor, 0.0f, 8.0f, "%.2f");
    if (ImGui::IsItemHovered()) side_tooltip("c (cache factor): offloading's mask-estimation bank of c * (k / b_sk) * log2 T tokens per head.");
    ImGui::PopItemWidth();

    s.invalid = validate_knobs(k, info ? info->n_layers : 0);
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
};

}  // namespace

std::unique_ptr<Panel> make_params_panel() { return std::make_unique<ParamsPanel>(); }

}  // namespace hipstudio::gui
