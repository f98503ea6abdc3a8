// Sidebar: which model, on which device, and which prompt.

#include <algorithm>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/capture_view.h"
#include "app/gui/file_browser.h"
#include "app/gui/files.h"
#include "app/gui/panel.h"
#include "app/gui/shortcuts.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class LoadPanel final : public Panel {
 public:
  const char* id() const override { return "load"; }
  const char* title() const override { return "Model & prompt"; }
  PaneSlot default_slot() const override { return PaneSlot::Sidebar; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const ModelInfo* info = ctx.snap.model.get();
    if (!synced_) {
      model_edit_ = s.model_path;
      prompt_edit_ = s.prompt;
      synced_ = true;
    }
    if (s.prompt != last_prompt_) {  // changed elsewhere (drop, recent, self-test)
      prompt_edit_ = s.prompt;
      last_prompt_ = s.prompt;
    }
    if (s.model_path != last_model_) {
      model_edit_ = s.model_path;
      last_model_ = s.model_path;
    }

    if (s.capture) {  // read-only: the capture's model and prompt; nothing here runs
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.warn));
      ImGui::TextWrapped("Showing capture %s (read-only). File > Close capture returns to the model below.",
                         s.capture->path.c_str());
      ImGui::PopStyleColor();
      ImGui::BeginDisabled();
    }
    // Hints live in tooltips: at 1280x720 the sidebar must show the view sliders without scrolling.
    ImGui::SetNextItemWidth(-ImGui::GetFrameHeight() * 4.2f);
    const bool enter = ImGui::InputTextWithHint("##model", "model: default stories15M", &model_edit_,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::IsItemHovered()) side_tooltip("Empty: the default stories15M; or a llama2.c file / Hugging Face folder");
    ImGui::SameLine();
    if (ImGui::Button("...##browse_model")) {
      browsing_ = Browsing::kModel;
      browser_.open(BrowseFor::kModel, "Load model", model_edit_, {".bin"});
    }
    if (ImGui::IsItemHovered()) side_tooltip("Browse for a llama2.c .bin file or a Hugging Face model folder");
    ImGui::SameLine();
    if (ImGui::Button("Load") || enter) {
      if (s.model_path == model_edit_) ++s.model_reload;  // same path: load it again
      s.model_path = model_edit_;
    }
    // Recent models lists the paths that loaded: the model stage is up to date for this path and
    // did not fail. One that fails later leaves the list.
    if (!s.capture && !s.model_path.empty()) {
      const std::string& failed = ctx.snap.error[kStageModel];
      if (ctx.snap.model && !ctx.snap.stale[kStageModel] && failed.empty()) {
        if (s.recent_models.empty() || s.recent_models.front() != s.model_path) s.add_recent_model(s.model_path);
      } else if (!failed.empty() && failed != "cancelled") {
        s.recent_models.erase(std::remove(s.recent_models.begin(), s.recent_models.end(), s.model_path), s.recent_models.end());
      }
    }
    if (!s.recent_models.empty()) {
      ImGui::SetNextItemWidth(-1);
      if (ImGui::BeginCombo("##recent_models", "Recent models", ImGuiComboFlags_HeightLarge)) {
        for (const auto& m : s.recent_models)
          if (ImGui::Selectable(m.c_str())) model_edit_ = s.model_path = m;
        ImGui::EndCombo();
      }
    }
    // Device and dtype: CUDA only when this build and machine have it.
    const bool cuda = info && info->cuda_available;
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.5f - 4);
    if (ImGui::BeginCombo("##device", s.device.c_str())) {
      if (ImGui::Selectable("cpu", s.device == "cpu")) s.device = "cpu";
      if (cuda) {
        if (ImGui::Selectable("cuda", s.device == "cuda")) s.device = "cuda";
      } else {
        ImGui::TextDisabled("cuda (not available here)");
      }
      ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##dtype", s.dtype.c_str())) {
      for (const char* d : {"f32", "bf16", "f16"})
        if (ImGui::Selectable(d, s.dtype == d)) s.dtype = d;
      ImGui::EndCombo();
    }
    if (info) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.text_dim));
      ImGui::TextWrapped("%s: %s, %lld layers, %lld heads (%lld KV), d %lld, context %lld, on %s",
                         info->display_name.c_str(), info->architecture.c_str(), static_cast<long long>(info->n_layers),
                         static_cast<long long>(info->n_heads), static_cast<long long>(info->n_kv_heads),
                         static_cast<long long>(info->head_dim), static_cast<long long>(info->max_seq_len),
                         info->device.c_str());
      ImGui::PopStyleColor();
    }
    if (!ctx.snap.error[kStageModel].empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.bad));
      ImGui::TextWrapped("Model: %s", ctx.snap.error[kStageModel].c_str());
      ImGui::PopStyleColor();
    }

    // The prompt box takes what the window can spare: 3 to 7 lines.
    const float lines = std::clamp(ImGui::GetMainViewport()->WorkSize.y / ImGui::GetTextLineHeightWithSpacing() * 0.12f, 3.0f, 7.0f);
    const float h = ImGui::GetTextLineHeightWithSpacing() * lines + ImGui::GetStyle().WindowPadding.y * 2;
    const bool dirty = prompt_edit_ != s.prompt && !s.capture;
    const bool apply_key = shortcut_pressed(Action::RunPrompt);
    if (editing_ && !s.capture) {
      // ImGui 1.86's multiline input does not wrap: while editing the box scrolls sideways; the
      // wrapped, tokenised view comes back after Run.
      ImGui::InputTextMultiline("##prompt", &prompt_edit_, ImVec2(-1, h));
      if (!dirty) ImGui::BeginDisabled();
      if (ImGui::Button("Run prompt (Ctrl+Enter)") || (dirty && apply_key)) {
        s.prompt = last_prompt_ = prompt_edit_;
        editing_ = false;
      }
      if (!dirty) ImGui::EndDisabled();
      ImGui::SameLine();
      if (ImGui::Button("Done")) editing_ = false;
    } else {
      draw_prompt_tokens(ctx, h);
      if (ImGui::Button("Edit prompt")) editing_ = true;
      if (ImGui::IsItemHovered()) side_tooltip("Type or paste a prompt, open a file below, or drop a .txt file on the window.");
      if (dirty && apply_key) s.prompt = last_prompt_ = prompt_edit_;
    }
    ImGui::SameLine();
    // The count of the prompt in the box only (a refused prompt's box must not show the last one's).
    if (ctx.snap.analysis && ctx.snap.analysis->prompt == (s.capture ? s.capture->analysis->prompt : s.prompt)) {
      ImGui::TextDisabled("%lld tokens", static_cast<long long>(ctx.snap.analysis->tokens()));
    } else if (!s.capture) {
      ImGui::TextDisabled("%zu bytes", s.prompt.size());
    }
    ImGui::SetNextItemWidth(-ImGui::GetFrameHeight() * 4.2f);
    ImGui::InputTextWithHint("##prompt_file", "text file path", &prompt_path_edit_);
    ImGui::SameLine();
    if (ImGui::Button("...##browse_prompt")) {
      browsing_ = Browsing::kPrompt;
      browser_.open(BrowseFor::kOpenFile, "Open prompt or capture", prompt_path_edit_, {});
    }
    if (ImGui::IsItemHovered()) side_tooltip("Browse for a prompt text file, or a .hipcap capture to view");
    ImGui::SameLine();
    if (ImGui::Button("Open")) open_prompt_file(s, prompt_path_edit_);
    if (!s.recent_prompts.empty()) {
      ImGui::SetNextItemWidth(-1);
      if (ImGui::BeginCombo("##recent_prompts", "Recent prompt files", ImGuiComboFlags_HeightLarge)) {
        for (const auto& p : s.recent_prompts)
          if (ImGui::Selectable(p.c_str())) {
            prompt_path_edit_ = p;
            open_prompt_file(s, p);
          }
        ImGui::EndCombo();
      }
    }
    if (s.capture) ImGui::EndDisabled();
    draw_browser(s, ctx.theme);
  }

 private:
  // The browser a "..." button opened; its choice fills that field and acts as the field's button.
  enum class Browsing { kNone, kModel, kPrompt };
  void draw_browser(AppState& s, const Theme& theme) {
    if (!browser_.draw(s.recent_folders, theme)) return;
    const std::string& path = browser_.chosen();
    if (browsing_ == Browsing::kModel) {
      model_edit_ = path;
      if (s.model_path == path) ++s.model_reload;
      s.model_path = path;
    } else if (browsing_ == Browsing::kPrompt) {
      prompt_path_edit_ = path;
      const std::string ext = path.size() >= 7 ? path.substr(path.size() - 7) : "";
      if (ext == ".hipcap") {
        open_capture_file(s, path);
      } else {
        open_prompt_file(s, path);
      }
    }
    browsing_ = Browsing::kNone;
  }

  FileBrowser browser_;
  Browsing browsing_ = Browsing::kNone;
  // The prompt wrapped to the sidebar, one token at a time as the model reads it (from the
  // analysis of this prompt; the plain text before it exists). A click picks the token view's query.
  void draw_prompt_tokens(PanelContext& ctx, float height) {
    AppState& s = ctx.state;
    const AnalysisView* a = ctx.snap.analysis.get();
    const std::string& prompt = s.capture ? s.capture->analysis->prompt : s.prompt;
    ImGui::BeginChild("##prompt_view", ImVec2(-1, height), true);
    // A refused prompt says why at the top of its own box: the box keeps its height, so the
    // controls below never move when an error comes or goes.
    const std::string& err = ctx.snap.error[kStageAnalysis];
    if (!err.empty() && !s.capture) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.bad));
      ImGui::PushTextWrapPos(0);
      ImGui::TextUnformatted(err == "cancelled" ? "Analysis cancelled: change a setting to run it again." : err.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
      ImGui::Separator();
    }
    // A capture without its tokens' text: the manifest's prompt text, not a row of "#id"s.
    const bool ids_only = s.capture && !s.capture->has_pieces;
    if (a && a->prompt == prompt && !a->prompt_tokens.empty() && !ids_only) {
      const int64_t n = static_cast<int64_t>(a->prompt_tokens.size());
      const TokenFlow f = prompt_flow_.draw(
          a->prompt_tokens.data(), n, [&](int64_t i) { return token_text(a->prompt_tokens[static_cast<size_t>(i)]); },
          [&](int64_t i) -> uint32_t { return i % 2 ? ctx.theme.plot_bg : 0; }, s.query_token, ctx.theme);
      if (f.hovered >= 0) side_tooltip("token %lld; click: show its attention in the token view", static_cast<long long>(f.hovered));
      if (f.clicked) {
        s.query_token = static_cast<int>(f.hovered);
        s.focus_panel = "tokens";
      }
    } else {
      // The text itself (not tokenised yet, refused, or a capture without the pieces), clipped to
      // the visible lines: a 100 KB prompt is drawn like a short one.
      prompt_text_.draw(prompt);
    }
    ImGui::EndChild();
  }

  TokenFlowView prompt_flow_;
  WrappedText prompt_text_;
  bool editing_ = false;
  bool synced_ = false;
  std::string model_edit_, prompt_edit_, prompt_path_edit_, last_prompt_, last_model_;
};

}  // namespace

std::unique_ptr<Panel> make_load_panel() { return std::make_unique<LoadPanel>(); }

}  // namespace hipstudio::gui
