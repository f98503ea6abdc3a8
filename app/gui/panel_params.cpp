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
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.62f);
  const bool changed = ImGui::SliderInt(label, v, lo, hi, "%d", log ? ImGuiSliderFlags_Logarithmic : 0);
  if (bad) {
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
  }
  if (ImGui::IsItemHovered() && help) ImGui::SetTooltip("%s\n(Ctrl+click to type a value)", help);
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
    knob("k (top-k tokens)", "k", &k.k, 1, std::max(64, tokens * 2), "Top-k budget in tokens; k / b_k key blocks per query block.", rule, bad, true);
    knob("b_q (query block)", "b_q", &k.b_q, 1, 64, "Query rows that share one mask.", rule, bad);
    knob("b_k (key block)", "b_k", &k.b_k, 1, 32, "Key block size: the unit the search selects.", rule, bad);
    knob("b_sq (query stride)", "b_sq", &k.b_sq, 1, 16, "Stride over the query rows when scoring a branch.", rule, bad);
    knob("b_sk (key stride)", "b_sk", &k.b_sk, 1, 16, "Stride over the keys of a representative block.", rule, bad);
    knob("sink", "sink", &k.sink, 0, 64, "Keys [0, sink) are always attended (StreamingLLM sink).", rule, bad);
    knob("window", "window", &k.window, 0, 128, "The most recent keys attended densely (sliding window).", rule, bad);
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.62f);
    ImGui::SliderFloat("repr. position", &k.rho, 0.0f, 1.0f, "%.2f");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Representative key block of a branch: 0 first, 0.5 center, 1 last.");
    knob("l_d (dense layers)", "l_d", &k.l_d, 0, layers, "The first l_d layers stay dense.", rule, bad);
    knob("r_m (refresh steps)", "r_m", &k.r_m, 1, 32, "Decode steps per mask re-estimation.", rule, bad);
    // Decode steps fit in the model's context after the prompt.
    const int room = info && ctx.snap.analysis ? static_cast<int>(info->max_seq_len - ctx.snap.analysis->tokens()) : 64;
    knob("decode steps", "decode steps", &k.decode_steps, 0, std::clamp(room, 0, 64),
         "Greedy decode steps after the prompt (KV cache view); at most the context left after the prompt.", rule, bad);
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.62f);
    ImGui::SliderFloat("cache factor c", &k.cache_factor, 0.0f, 8.0f, "%.2f");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Offloading: mask-estimation bank of c * (k / b_sk) * log2 T tokens per head.");

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
      ImGui::SetTooltip("k 32, b_q 8, b_k 2, b_sq 1, b_sk 1, sink 2, window 4, l_d 1, r_m 4: the paper's settings scaled\n"
                        "to stories15M's 256-token context (the paper's k = 512 would select everything).");
    ImGui::SameLine();
    ImGui::TextDisabled("Kb = %d blocks", k.b_k > 0 ? k.k / k.b_k : 0);

    ImGui::Separator();
    draw_selection(ctx);
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
    ImGui::TextDisabled("File > Close capture to edit parameters and run.");
    ImGui::Separator();
    draw_selection(ctx);
  }

  // Which layer, head and query block every view shows ([ / ] heads, PgUp / PgDn layers).
  static void draw_selection(PanelContext& ctx) {
    AppState& s = ctx.state;
    const ModelInfo* info = ctx.snap.model.get();
    const AnalysisView* a = ctx.snap.analysis.get();
    const int layers = a ? static_cast<int>(a->analysis->layers.size()) : (info ? static_cast<int>(info->n_layers) : 1);
    const int heads = a && !a->analysis->inputs.empty() ? static_cast<int>(a->analysis->inputs[0].heads) : 1;
    const int64_t bq = a ? a->analysis->options.hip.hip.b_q : 1;
    const int qbs = a ? static_cast<int>((a->tokens() + bq - 1) / bq) : 1;
    ImGui::TextUnformatted("View");
    const float w = ImGui::GetContentRegionAvail().x * 0.62f;
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("layer", &s.layer, 0, std::max(0, layers - 1));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("PgUp / PgDn");
    const int l_d = s.capture ? s.capture->knobs.l_d : s.applied.l_d;
    if (a && s.layer < l_d) {
      ImGui::SameLine();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ctx.theme.warn), "(dense)");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Layer < l_d runs dense in the model; the masks show what HiP would select.");
    }
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("head", &s.head, 0, std::max(0, heads - 1));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("[ and ]");
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("query block", &s.query_block, 0, std::max(0, qbs - 1));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Or click a row of the mask view.");
    if (a) {  // before the first result there is nothing to clamp against
      s.layer = std::clamp(s.layer, 0, std::max(0, layers - 1));
      s.head = std::clamp(s.head, 0, std::max(0, heads - 1));
      s.query_block = std::clamp(s.query_block, 0, std::max(0, qbs - 1));
    }
  }
};

}  // namespace

std::unique_ptr<Panel> make_params_panel() { return std::make_unique<ParamsPanel>(); }

}  // namespace hipstudio::gui
