// Generate: continue the prompt greedily with dense attention and with HiP, side by side, with
// tokens per second and the device that produced them.
#include <imgui.h>

#include "app/gui/capture_view.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class GeneratePanel final : public Panel {
 public:
  const char* id() const override { return "generate"; }
  const char* title() const override { return "Generate"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const auto& g = ctx.snap.generate;
    const bool running = ctx.snap.busy && ctx.snap.running_stage == kStageGenerate;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
    ImGui::SliderInt("new tokens", &s.generate_tokens, 1, 256);
    ImGui::SameLine();
    const bool can = ctx.snap.model && !ctx.snap.model->synthetic && s.invalid.empty() && !s.capture;
    if (!can) ImGui::BeginDisabled();
    if (ImGui::Button(running ? "Restart (Ctrl+G)" : "Generate (Ctrl+G)")) ++s.generate_id;
    if (!can) ImGui::EndDisabled();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Greedy decoding; the HiP side uses the current parameters.");
    if (s.capture) {
      empty_state("A capture holds no model to generate with: File > Close capture returns to the live run.", t);
      return;
    }
    // What the run will meet, said here before Generate is pressed: the prompt (as the analysis
    // tokenised it) plus the new tokens must fit the model's context.
    const AnalysisView* a = ctx.snap.analysis.get();
    if (ctx.snap.model && a && a->prompt == s.prompt && ctx.snap.model->max_seq_len > 0) {
      const int64_t context = ctx.snap.model->max_seq_len, n = a->tokens();
      if (n + s.generate_tokens > context) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(t.warn));
        ImGui::TextWrapped("The prompt's %lld tokens and %d new ones pass the model's context of %lld tokens: generation stops "
                           "%s.",
                           static_cast<long long>(n), s.generate_tokens, static_cast<long long>(context),
                           n >= context ? "before its first token (shorten the prompt)"
                                        : fmt("at %lld new tokens (set new tokens to %lld or fewer)", static_cast<long long>(context - n),
                                              static_cast<long long>(context - n)).c_str());
        ImGui::PopStyleColor();
      }
    }
    // A failed generation says why here, not only in the status line.
    const std::string& err = ctx.snap.error[kStageGenerate];
    if (!err.empty() && !running) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(err == "cancelled" ? t.warn : t.bad));
      ImGui::TextWrapped("%s", err == "cancelled" ? "Generation cancelled: press Generate to run it again."
                                                  : ("Generation failed: " + err).c_str());
      ImGui::PopStyleColor();
    }
    if (!g) {
      if (err.empty()) empty_state("Press Generate to continue the prompt with dense attention and with HiP.", t);
      return;
    }
    StaleScope grey(ctx.snap.stale[kStageGenerate] && !running);
    ImGui::TextDisabled("on %s", g->device.c_str());
    const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) / 2;
    const float h = ImGui::GetContentRegionAvail().y;
    // The prompt, then its continuation in the side's colour, each a clipped text (a long prompt
    // draws only its visible lines).
    auto side = [&](const char* id, const char* name, const std::string& text, int64_t n, double tps, uint32_t col, WrappedText& body) {
      ImGui::BeginChild(id, ImVec2(w, h), true);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(col), "%s", name);
      if (tps > 0) {
        ImGui::TextDisabled("%lld tokens, %.1f tokens/s (decode)", static_cast<long long>(n), tps);
      } else {
        ImGui::TextDisabled("%s", n > 0 || !text.empty() ? "running..." : "waiting");
      }
      ImGui::Separator();
      prompt_text_[&body == &dense_text_ ? 0 : 1].draw(s.prompt);
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(col));
      body.draw(text);
      ImGui::PopStyleColor();
      ImGui::EndChild();
    };
    side("##gen_dense", "Dense attention", g->dense_text, g->dense_tokens, g->dense_tok_s, t.dense, dense_text_);
    ImGui::SameLine();
    side("##gen_hip", "HiP", g->hip_text, g->hip_tokens, g->hip_tok_s, t.hip, hip_text_);
  }

 private:
  WrappedText dense_text_, hip_text_, prompt_text_[2];
};

}  // namespace

std::unique_ptr<Panel> make_generate_panel() { return std::make_unique<GeneratePanel>(); }

}  // namespace hipstudio::gui
